"""The Lean version table (tasks/lean/versions.py, the same as docs/lean-backends.md) and the
preflight that refuses a repository outside a backend's or tracing's range before any work.

    PYTHONPATH=$PWD .venv/bin/python -m pytest tests/tasks/test_lean_versions.py -q
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from storage.errors import InputError
from tasks.lean import BackendSettings, preflight
from tasks.lean.versions import SUPPORTED, check_version, is_supported, lean_version, table_markdown
from tests.doubles.sample_store import store, theorems  # noqa: F401  (fixtures)

DOCS = Path(__file__).resolve().parents[2] / "docs" / "lean-backends.md"


@pytest.mark.parametrize(
    "name, version, supported",
    [
        ("repl", "v4.8.0-rc1", True),  # LeanInteract's first REPL tag
        ("repl", "v4.7.0", False),  # older: lean-interact raises ValueError
        ("repl", "v4.33.0-rc1", True),  # its last tag
        ("repl", "v4.33.0", False),  # no tag yet
        ("leandojo", "v4.9.0", True),  # tracing's lower bound: the Dojo needs a trace
        ("leandojo", "v4.8.0", False),
        ("leandojo", "v4.11.2", True),
        ("leandojo", "v4.12.0-rc1", False),  # Dojo's tactics broken from v4.12 (LeanDojo#211)
        ("leandojo", "v4.20.0", False),  # the sample's version
        ("tracing", "v4.27.0", True),
        ("tracing", "v4.28.0-rc1", False),  # ExtractData.lean breaks (LeanDojo-v2#6)
        ("tracing", "v4.9.0", True),
        ("tracing", "v4.8.0", False),  # ExtractData.lean: no `Lean.HashMap.get?` (LeanAgent#7)
    ],
)
def test_version_ranges(name, version, supported):
    assert is_supported(name, version) is supported


def test_toolchain_text_gives_the_version():
    assert lean_version("leanprover/lean4:v4.9.0\n") == "v4.9.0"
    assert lean_version("leanprover/lean4:v4.12.0-rc1") == "v4.12.0-rc1"
    assert lean_version("leanprover/lean4:nightly-2024-05-01") is None


def test_refusal_is_one_line_naming_repository_version_range_and_fix():
    with pytest.raises(InputError) as e:
        check_version("leandojo", "https://github.com/u/r@0123456789ab", "leanprover/lean4:v4.20.0\n")
    msg = str(e.value)
    assert "\n" not in msg
    assert msg.startswith("https://github.com/u/r@0123456789ab: uses Lean v4.20.0")
    assert "v4.9.0 to v4.11.x" in msg and "LeanDojo#211" in msg and "backend.kind: repl" in msg
    with pytest.raises(InputError, match="names no Lean release"):
        check_version("tracing", "r", "leanprover/lean4:nightly-2024-05-01")
    check_version("kimina", "r", "leanprover/lean4:v4.2.0")  # no range Dojoflow knows of: never refused


def test_docs_hold_the_same_table_as_the_code():
    assert table_markdown() in DOCS.read_text(), "regenerate with `python -m tasks.lean.versions`"
    assert set(SUPPORTED) == {"repl", "kimina", "leandojo", "tracing"}


def test_preflight_refuses_leandojo_on_a_repository_at_lean_v4_20(store, theorems, tmp_path, monkeypatch):
    from tests.doubles.dojo_lean import make_dojo_lean

    double = make_dojo_lean(tmp_path / "dojo", repos=("NatBasics",))
    monkeypatch.setenv("PATH", f"{double.bin_dir}{os.pathsep}{os.environ['PATH']}")
    settings = BackendSettings(kind="leandojo", leandojo={"cache_dir": str(double.cache_dir)})
    theorem = theorems["NatBasics.square_add"]
    with pytest.raises(InputError, match=r"uses Lean v4\.20\.0; the leandojo backend") as e:
        preflight(settings, [theorem])
    assert theorem.url in str(e.value)
    toolchain = next(double.cache_dir.glob("gitpython-NatBasics-*")) / "NatBasics" / "lean-toolchain"
    toolchain.write_text("leanprover/lean4:v4.9.0\n")
    preflight(settings, [theorem])  # in range: passes
    with pytest.raises(InputError, match="no traced repository"):  # not traced: refused before any Dojo
        preflight(settings, [theorems["ListLemmas.rev_snoc_snoc"]])
    assert not double.events()  # no Lean started


def test_preflight_refuses_repl_on_a_checkout_older_than_leaninteracts_tags(store, theorems, tmp_path):
    import shutil

    from storage.sample import SAMPLE_ROOT
    from tests.doubles.lean_process import make_repl_double

    checkout = tmp_path / "NatBasics"
    shutil.copytree(SAMPLE_ROOT / "lean" / "NatBasics", checkout)
    (checkout / "lean-toolchain").write_text("leanprover/lean4:v4.7.0\n")
    double = make_repl_double(tmp_path / "repl")
    lake = double.lake_path
    options = {"lake_path": str(lake), "projects": {"NatBasics": str(checkout)}}
    theorem = theorems["NatBasics.square_add"]
    with pytest.raises(InputError, match=r"uses Lean v4\.7\.0; the repl backend \(lean-interact 0\.11\.6\)"):
        preflight(BackendSettings(kind="repl", repl=options), [theorem])
    # a REPL the user built for their version (repl_path) is not bound to LeanInteract's tags
    preflight(BackendSettings(kind="repl", repl={**options, "repl_path": str(double.repl_path)}), [theorem])
