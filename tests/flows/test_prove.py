"""`dojoflow prove` against the Lean REPL double (launched by LeanInteract through a fake
`lake`; no Lean runs here) with tactics from an OpenAI-compatible endpoint double: it
finds the known proof of a sample `sorry` theorem, records it, and writes a patch that
applies to a clean checkout. Bad input fails before any search, with nothing written.

    PYTHONPATH=$PWD HF_HUB_OFFLINE=1 .venv/bin/python -m pytest tests/flows/test_prove.py -q
"""

from __future__ import annotations

import json
import subprocess

import pytest
import yaml
from typer.testing import CliRunner

from flows.cli import app
from storage.proofs import read_proofs
from storage.sample.content.known_proofs import KNOWN_PROOFS
from tests.doubles.lean_process import make_repl_double
from tests.doubles.openai_endpoint import EndpointDouble
from tests.doubles.sample_store import sample_store

SQUARE_ADD = next(p for p in KNOWN_PROOFS if p.full_name == "NatBasics.square_add")


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False, env={"COLUMNS": "200"})


def known_proof_table() -> dict:
    """For each state of square_add's known proof, its next tactic (likely) and a wrong one."""
    table = {}
    states = [None] + [after for _, after in SQUARE_ADD.steps]
    for (tactic, _), before in zip(SQUARE_ADD.steps, states):
        key = "⊢ square (a + b)" if before is None else before.split("⊢")[-1].strip()
        table[key] = [(tactic, [-0.2]), ("rfl", [-1.5])]
    return table


def write_config(path, double, endpoint_url, work_dir, **overrides) -> None:
    path.write_text(
        yaml.safe_dump(
            {
                "proving": {
                    "backend": {
                        "kind": "repl",
                        "repl": double.options(),
                        "work_dir": str(work_dir),
                        "sandbox": double.sandbox(),
                    },
                    "generator": {
                        "kind": "endpoint",
                        "endpoint": {"url": endpoint_url, "model": "double", "api_key_env": None},
                    },
                    "num_tactics": 2,
                    "max_expansions": 8,
                    "timeout_s": 300,
                    "batch_size": 4,
                    **overrides,
                }
            }
        )
    )


def test_prove_finds_a_known_proof_against_repl_double_and_writes_a_patch_that_applies(prefect, tmp_path):
    home, out = tmp_path / "home", tmp_path / "patches"
    store = sample_store(home)
    double = make_repl_double(tmp_path / "double")
    with EndpointDouble(known_proof_table()) as endpoint:
        write_config(tmp_path / "prove.yaml", double, endpoint.url, tmp_path / "work")
        r = invoke("prove", tmp_path / "prove.yaml", "--repo", "NatBasics", "--home", home, "--out", out)
    assert r.exit_code == 0, r.output
    # no comparator here: the proof is elaborator-checked, and the terminal, card and rows say so
    assert "proved NatBasics.square_add (checked by repl+elaborator_checked)" in r.output
    # the run's results card (issue 17 §1): each sorry theorem, its outcome and the checker that decided it
    card_path = next(line for line in r.output.splitlines() if line.startswith("results card: ")).split(": ", 1)[1]
    card = open(card_path.strip()).read()
    assert "## `sorry` theorems tried" in card and "| NatBasics.square_add | proved | repl+elaborator_checked |" in card
    assert "## Provenance" in card and "## How to cite" in card
    from importlib.metadata import version  # the backend's version, recorded with the run (issue 17)

    assert f"backend `repl via lean-interact {version('lean-interact')}`" in card

    rows = read_proofs(store, purpose="sorry")
    assert [(p["full_name"], p["checker"], p["tactics"]) for p in rows] == [
        ("NatBasics.square_add", "repl+elaborator_checked", SQUARE_ADD.tactics)
    ]
    assert rows[0]["axioms"] == ["propext"]
    assert '"tactic": "omega"' in double.received()  # the search ran in the double, tactic by tactic

    patch = out / "NatBasics.patch"
    assert patch.is_file() and "-  sorry" in patch.read_text()
    assert invoke("samples", tmp_path / "checkout").exit_code == 0  # a clean checkout of the traced commit
    repo = tmp_path / "checkout" / "NatBasics"
    subprocess.run(["git", "apply", "--check", str(patch)], cwd=repo, check=True)
    subprocess.run(["git", "apply", str(patch)], cwd=repo, check=True)
    text = (repo / "NatBasics" / "Mul.lean").read_text()
    block = text.split("theorem square_add")[1].split("\n\n")[0]
    assert "sorry" not in block and all(t in block for t in SQUARE_ADD.tactics)


@pytest.fixture(scope="module")
def refusal_home(tmp_path_factory):
    """(home, store): one sample store for the tests of refused input. Each asserts that its refusal
    wrote nothing (no proof, no patch, the home unchanged), so they can share it."""
    home = tmp_path_factory.mktemp("refusals") / "home"
    return home, sample_store(home)


@pytest.mark.parametrize(
    "args, overrides, endpoint_mode, message",
    [
        (["--repo", "NoSuchRepo"], {}, "ok", "NoSuchRepo: matches no repository in the store"),
        (["--theorem", "NatBasics.no_such_theorem"], {}, "ok", "NatBasics.no_such_theorem: no such theorem"),
        (["--theorem", "NatBasics.add_zero'"], {}, "ok", "has a proof without `sorry`"),
        ([], {}, "garbage", "not an OpenAI completions response"),
        ([], {"max_expansions": 0}, "ok", "`proving.max_expansions` Input should be greater than or equal to 1"),
        ([], {"timeout_s": -5}, "ok", "`proving.timeout_s` Input should be greater than 0"),
    ],
)
def test_prove_refuses_bad_input_before_any_search(
    prefect, refusal_home, tmp_path, args, overrides, endpoint_mode, message
):
    home, store = refusal_home
    double = make_repl_double(tmp_path / "double")
    with EndpointDouble(known_proof_table()) as endpoint:
        endpoint.mode = endpoint_mode
        write_config(tmp_path / "prove.yaml", double, endpoint.url, tmp_path / "work", **overrides)
        r = invoke(
            "prove",
            tmp_path / "prove.yaml",
            "--repo",
            "NatBasics",
            *args,
            "--home",
            home,
            "--out",
            tmp_path / "patches",
        )
        sent = [q for q in endpoint.requests if q["body"].get("max_tokens") != 1]
    assert r.exit_code == 2 and message in r.output
    assert r.output.startswith("error: ") and len(r.output.strip().splitlines()) == 1, r.output  # no flow ran
    assert not double.requests() and not sent  # no search started
    assert read_proofs(store) == [] and not (tmp_path / "patches").exists()


def test_prove_refuses_a_checkpoint_that_is_not_a_tactic_generator(prefect, refusal_home, tmp_path):
    home, _ = refusal_home
    retriever = tmp_path / "retriever-ckpt"
    retriever.mkdir()
    (retriever / "dojoflow-checkpoint.json").write_text(json.dumps({"checkpoint": {"trainer": "retriever"}}))
    (tmp_path / "prove.yaml").write_text(yaml.safe_dump({"proving": {"backend": {"kind": "replay"}}}))
    r = invoke("prove", tmp_path / "prove.yaml", "--checkpoint", retriever, "--home", home)
    assert r.exit_code == 2 and "not a tactic generator" in r.output


@pytest.mark.parametrize(
    "args, message",
    [
        (["--repo", "nope"], "nope: matches no repository in the store"),
        (["--checkpoint", "CKPT"], "holds no model (no config.json or adapter_config.json)"),
        (["--out", "FILE"], "is a file, not a folder. give --out a folder"),
        (["--checkpoint", "FILE"], "is a file, not a folder. give a tactic generator's checkpoint folder"),
    ],
)
def test_prove_input_errors_are_one_line_before_prefect_starts(refusal_home, tmp_path, args, message):
    """As a user runs it (a process of its own): one line on stderr, exit 2, no Prefect server
    started, nothing written (it printed 67 lines with two tracebacks after a flow run)."""
    import os
    import sys

    home, _ = refusal_home
    (tmp_path / "prove.yaml").write_text(yaml.safe_dump({"proving": {"backend": {"kind": "replay"}}}))
    folder = tmp_path / "not-a-model"
    (folder / "odd").mkdir(parents=True)  # any folder: it was fingerprinted whole before it was checked
    (tmp_path / "file").write_text("x")
    paths = {"CKPT": str(folder), "FILE": str(tmp_path / "file")}
    before = sorted(p.relative_to(home) for p in home.rglob("*") if not p.name.endswith("lock"))
    r = subprocess.run(
        [sys.executable, "-m", "flows.cli", "prove", tmp_path / "prove.yaml", *[paths.get(a, a) for a in args]]
        + ["--home", home],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "300"},
        timeout=600,
    )
    assert r.returncode == 2 and r.stdout == "", r.stdout + r.stderr
    assert r.stderr.startswith("error: ") and len(r.stderr.splitlines()) == 1 and message in r.stderr, r.stderr
    assert sorted(p.relative_to(home) for p in home.rglob("*") if not p.name.endswith("lock")) == before


def test_prove_with_leandojo_refuses_a_repository_at_a_lean_version_the_dojo_cannot_run(prefect, tmp_path, monkeypatch):
    """Mismatch #4: Dojo's tactic interaction is broken from Lean v4.12 (LeanDojo#211); the sample is
    at v4.20.0, so the run stops at preflight with one line, exit code 2, before any Lean starts."""
    import os

    from tests.doubles.dojo_lean import make_dojo_lean

    home = tmp_path / "home"
    store = sample_store(home)
    dojo = make_dojo_lean(tmp_path / "dojo", repos=("NatBasics",))
    monkeypatch.setenv("PATH", f"{dojo.bin_dir}{os.pathsep}{os.environ['PATH']}")
    with EndpointDouble(known_proof_table()) as endpoint:
        (tmp_path / "prove.yaml").write_text(
            yaml.safe_dump(
                {
                    "proving": {
                        "backend": {
                            "kind": "leandojo",
                            "leandojo": {"cache_dir": str(dojo.cache_dir)},
                            "work_dir": str(tmp_path / "work"),
                        },
                        "generator": {
                            "kind": "endpoint",
                            "endpoint": {"url": endpoint.url, "model": "double", "api_key_env": None},
                        },
                    }
                }
            )
        )
        r = invoke("prove", tmp_path / "prove.yaml", "--repo", "NatBasics", "--home", home, "--out", tmp_path / "out")
        sent = [q for q in endpoint.requests if q["body"].get("max_tokens") != 1]
    assert r.exit_code == 2, r.output
    line = [x for x in r.output.splitlines() if x.startswith("error: ")]  # the CLI's own one-line error
    assert (
        len(line) == 1 and "NatBasics" in line[0] and "uses Lean v4.20.0" in line[0] and "v4.9.0 to v4.11.x" in line[0]
    ), r.output
    assert "backend.kind: repl" in line[0]
    assert not dojo.events() and not sent and read_proofs(store) == []
