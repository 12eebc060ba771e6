"""How a Lean process starts (issue 14, reference lean-conformance.md #6, #7, #14): the
repl backend, through the real LeanInteract and Dojoflow's launcher, against a fake elan
(tests/doubles/fake_elan.py, written from elan's source) whose `lake` is a symlink to
`elan`, with the REPL double behind it. No Lean runs here.

    PYTHONPATH=$PWD .venv/bin/python -m pytest tests/lean/test_launch.py -q
"""

from __future__ import annotations

import pytest

from tasks.lean import BackendSettings, open_backend
from tasks.lean.config import MEMORY_LIMIT_MB
from tests.doubles.fake_elan import make_elan
from tests.doubles.lean_process.launch import LEAN_TOOLCHAIN, make_repl_double
from tests.doubles.sample_store import store, theorems  # noqa: F401  (fixtures)


@pytest.mark.parametrize("sandboxed", [True, False], ids=["bwrap", "unsafe_no_sandbox"])
def test_lake_symlinked_to_elan_runs_the_projects_toolchain_against_repl_double(
    store, theorems, tmp_path, monkeypatch, sandboxed
):
    # Debian's elan: lake -> elan (a symlink); elan's default toolchain is another Lean
    # version, whose Lean cannot read the project's .olean files.
    elan_home = tmp_path / "elan"
    lake = make_elan(elan_home, LEAN_TOOLCHAIN.strip(), default="leanprover/lean4:v4.9.0")
    monkeypatch.setenv("ELAN_HOME", str(elan_home))
    monkeypatch.setenv("ELAN_TOOLCHAIN", "leanprover/lean4:v4.9.0")  # the user's shell override: not the project's
    double = make_repl_double(tmp_path / "double")
    settings = BackendSettings(
        kind="repl",
        repl=double.options(lake_path=str(lake)),
        work_dir=str(tmp_path / "work"),
        sandbox=double.sandbox(unsafe_no_sandbox=not sandboxed),
    )
    backend = open_backend(settings, store)
    try:
        result = backend.start(theorems["NatBasics.square_add"])
    finally:
        backend.close()
    assert result.status == "state", result.message
    assert double.requests(), "the REPL never started"


def test_the_default_memory_limit_fits_import_mathlib():
    # kimina-lean-server#68: `import Mathlib` needs >= 9 GB of address space; LeanInteract's
    # AutoLeanServer restarts a REPL whose resident memory reaches 0.8 x the limit.
    limit = BackendSettings().memory_limit_mb
    assert limit == MEMORY_LIMIT_MB
    assert limit * 2**20 * 0.8 >= 9e9
