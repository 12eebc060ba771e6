"""The gold checker (comparator, tasks/lean/gold.py) held to its contract. Only the Lean side is
faked: comparator, lean4export and lake by tests/doubles/comparator_double.py (answering as
comparator's own recorded cases show), the REPL by the Lean process double; Dojoflow's backend,
verification cache, sandbox launcher (bubblewrap), verdict rule and GRPO reward run as they are.

No verdict here says Lean or its kernel checked anything: the doubles decide from the inputs.

    PYTHONPATH=$PWD python -m pytest tests/lean/test_gold_contract.py -q
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from storage.errors import InputError
from tasks.lean import BackendSettings, judge
from tasks.lean.backend import TheoremSpec
from tasks.lean.gold import challenge_problem, gold_name, read_outcome
from tasks.lean.gold_backend import ComparatorRunner
from tasks.lean.registry import gold_checkers
from tasks.lean.verdict import fast_judge
from tasks.lean.verified import open_verifier
from tests.doubles.comparator_double import make_comparator_double, runs
from tests.doubles.lean_process import make_repl_double
from tests.doubles.sample_store import store, theorems  # noqa: F401  (fixtures)

CASES = Path(__file__).resolve().parents[1] / "doubles" / "comparator_cases"
AND_SWAP = "LogicPuzzles.and_swap'"
AND_SWAP_PROOF = "intro h\nconstructor\nexact h.2\nexact h.1"
# Accepted by the elaborator in the adversarial state of adversarial-classes.md (the Lean process
# double's KERNEL_DECIDE); a fresh build finds no Decidable instance of a ∀ statement.
KERNEL_CHEAT = "decide +kernel"


@pytest.fixture
def lean(tmp_path, monkeypatch):
    """(the REPL double, the comparator doubles' folder).

    The text guard refuses `decide +kernel` outright (tasks/lean/guard.py, KERNEL_DECIDE_ALLOWED;
    tests/lean/test_adversarial.py). These tests lift that refusal to show the layer below it: a
    cheat that got past every text rule is still never proved once comparator replays it."""
    monkeypatch.setattr("tasks.lean.guard.KERNEL_DECIDE_ALLOWED", True)
    return make_repl_double(tmp_path / "repl"), make_comparator_double(tmp_path / "gold-bin")


def settings(tmp_path, lean, **gold) -> BackendSettings:
    repl, bin_dir = lean
    sandbox = repl.sandbox()
    return BackendSettings(
        kind="repl",
        repl=repl.options(),
        work_dir=str(tmp_path / "work"),
        sandbox=sandbox,
        gold={
            "check": "on",
            "comparator_path": str(bin_dir / "comparator"),
            "lean4export_path": str(bin_dir / "lean4export"),
            **gold,
        },
    )


def test_the_gold_checker_is_declared_once():
    assert list(gold_checkers()) == ["comparator"]


@pytest.mark.parametrize("case", sorted(p.name for p in CASES.iterdir() if p.is_dir()))
def test_the_double_gives_comparators_recorded_outcome(case, tmp_path, lean):
    """Each recorded case (config.json, test.json), its steps under a pass-through landrun (as
    comparator's own tests run with scripts/fake-landrun.sh), read by Dojoflow's `read_outcome`."""
    bin_dir = lean[1]
    landrun = bin_dir / "landrun"
    landrun.write_text('#!/bin/sh\nwhile [ "$1" != "--" ]; do shift; done; shift; exec "$@"\n')
    landrun.chmod(0o755)
    folder = tmp_path / case
    shutil.copytree(CASES / case, folder)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "COMPARATOR_LANDRUN": str(landrun)}
    done = subprocess.run(
        [str(bin_dir / "comparator"), "config.json"], cwd=folder, env=env, capture_output=True, text=True
    )
    want = json.loads((CASES / case / "test.json").read_text())["exit_code"]
    assert done.returncode == want, done.stderr
    result = read_outcome(done.returncode, done.stdout, done.stderr)
    assert result.status == ("accepted" if want == 0 else "rejected"), result


@pytest.mark.parametrize("case", ["simple_match", "simple_axiom_issue"])
def test_comparators_builds_run_under_dojoflows_bubblewrap_launcher(case, tmp_path, lean):
    runner = ComparatorRunner(settings(tmp_path, lean))
    assert runner.sandbox in ("bubblewrap", "landrun")
    folder = tmp_path / case
    shutil.copytree(CASES / case, folder)
    result = runner.run(folder, folder / "config.json")
    assert result.status == ("accepted" if case == "simple_match" else "rejected"), result
    assert (folder / ".lake" / "build" / "Solution.olean").exists()  # written inside the sandbox


def test_a_proof_the_fast_backend_accepts_is_proved_only_after_the_kernel_replay(store, theorems, tmp_path, lean):
    backend = open_verifier(settings(tmp_path, lean), store)
    try:
        assert backend.name == "repl+kernel_replayed"
        check = backend.check_proof(theorems[AND_SWAP], AND_SWAP_PROOF)
        verdict = judge(check, AND_SWAP_PROOF)
        assert verdict.proved and verdict.level == "kernel_replayed", verdict
        assert check.gold.status == "accepted" and runs(lean[1]) == 1
    finally:
        backend.close()


def test_what_the_elaborator_accepts_and_the_kernel_replay_rejects_is_never_proved(store, theorems, tmp_path, lean):
    backend = open_verifier(settings(tmp_path, lean), store)
    try:
        check = backend.check_proof(theorems[AND_SWAP], KERNEL_CHEAT)
    finally:
        backend.close()
    assert fast_judge(check, KERNEL_CHEAT).proved  # the elaborator's answers alone would count it
    verdict = judge(check, KERNEL_CHEAT)
    assert verdict.status == "rejected" and "solution_build" in verdict.reason, verdict


def test_rejected_candidates_never_reach_comparator(store, theorems, tmp_path, lean):
    backend = open_verifier(settings(tmp_path, lean), store)
    try:
        check = backend.check_proof(theorems[AND_SWAP], "intro h\nexact h")
    finally:
        backend.close()
    assert judge(check, "intro h\nexact h").status == "rejected" and check.gold is None
    assert runs(lean[1]) == 0


def test_a_crashing_comparator_is_retried_once_then_an_error_never_a_verdict(store, theorems, tmp_path, lean):
    control = lean[1] / "control.json"
    backend = open_verifier(settings(tmp_path, lean).model_copy(update={"verification_cache": False}), None)
    try:
        control.write_text(json.dumps({"crash": 1}))
        once = backend.check_proof(theorems[AND_SWAP], AND_SWAP_PROOF)
        assert judge(once, AND_SWAP_PROOF).level == "kernel_replayed" and runs(lean[1]) == 2
    finally:
        backend.close()
    control.write_text(json.dumps({"crash": 2}))
    uncached = open_verifier(settings(tmp_path, lean).model_copy(update={"verification_cache": False}), None)
    try:
        twice = uncached.check_proof(theorems[AND_SWAP], AND_SWAP_PROOF)
    finally:
        uncached.close()
    verdict = judge(twice, AND_SWAP_PROOF)
    assert verdict.status == "error" and "crashed" in verdict.reason, verdict
    assert runs(lean[1]) == 4


def test_a_proof_is_replayed_once_then_read_from_the_verification_cache(store, theorems, tmp_path, lean):
    for _ in range(2):  # two runs, each with its own backend and process memory: the catalog answers
        backend = open_verifier(settings(tmp_path, lean), store)
        try:
            verdict = judge(backend.check_proof(theorems[AND_SWAP], AND_SWAP_PROOF), AND_SWAP_PROOF)
        finally:
            backend.close()
        assert verdict.level == "kernel_replayed"
    assert runs(lean[1]) <= 1  # 0 when an earlier test of this module stored it
    assert backend.gold.gold_stats["gold_hits"] == 1


def test_without_comparator_runs_go_on_and_every_proof_is_named_elaborator_checked(store, theorems, tmp_path, lean):
    missing = settings(tmp_path, lean, check="auto", comparator_path=str(tmp_path / "no-comparator"))
    backend = open_verifier(missing, store)
    try:
        assert backend.name == "repl+elaborator_checked"
        verdict = judge(backend.check_proof(theorems[AND_SWAP], KERNEL_CHEAT), KERNEL_CHEAT)
    finally:
        backend.close()
    assert verdict.proved and verdict.level == "elaborator_checked"
    with pytest.raises(InputError, match="comparator is not installed"):
        open_verifier(settings(tmp_path, lean, check="on", comparator_path=str(tmp_path / "no-comparator")), store)


def test_grpo_pays_a_proof_only_after_its_kernel_replay(store, theorems, tmp_path, lean):
    from tasks.grpo.config import RewardSettings
    from tasks.grpo.rewards import LeanRewarder

    backend = open_verifier(settings(tmp_path, lean), store)
    rewarder = LeanRewarder(backend, RewardSettings(error_penalty=-0.1, finished=1.0))
    try:
        honest = rewarder._judged(theorems[AND_SWAP], AND_SWAP_PROOF, "proved")
        cheat = rewarder._judged(theorems[AND_SWAP], KERNEL_CHEAT, "proved")
    finally:
        backend.close()
    assert honest.reward == 1.0 and honest.accepted
    assert cheat.reward == -0.1 and not cheat.accepted and not cheat.failed  # a cheat: no partial credit


def test_a_statement_comparator_cannot_take_as_a_challenge_is_named():
    assert challenge_problem("theorem foo (n : Nat) : n = n", "NatBasics.foo") is None
    why = challenge_problem("def foo : Nat", "foo")
    assert why is not None and "checks theorems only" in why
    assert gold_name(TheoremSpec("", "", "", "", "«123».foo", "theorem foo : True")) == "«123».foo"


def test_the_importer_refuses_a_statement_comparator_cannot_take_naming_it():
    from storage.leandojo.fields import check_statement

    assert check_statement("theorem foo (n : Nat) : n = n", "foo", "export.json", "record 0") is not None
    with pytest.raises(InputError, match="checks theorems only"):
        check_statement("def foo : Nat", "foo", "export.json", "record 0")


def test_output_a_proof_prints_during_its_build_cannot_turn_its_rejection_into_an_error():
    """comparator's builds inherit its stdout: a solution can print comparator's own step lines."""
    stdout = "Building Challenge\nExporting #[t] from Challenge\nBuilding Solution\nBuilding Challenge\n"
    result = read_outcome(1, stdout, "uncaught exception: Child exited with 1")
    assert result.status == "rejected" and result.category == "solution_build"
    forged = read_outcome(1, stdout + "Your solution is okay!\n", "uncaught exception: Child exited with 1")
    assert forged.status == "rejected"  # a success line is read only with exit code 0
    challenge = read_outcome(1, "Building Challenge\n", "uncaught exception: Child exited with 1")
    assert challenge.status == "error" and challenge.category == "challenge"


def test_comparators_output_is_read_capped_not_whole(tmp_path):
    from tasks.lean.gold import OUTPUT_CAP, run_comparator

    loud = "head -c 30000000 /dev/zero | tr '\\0' a; echo 'uncaught exception: Child exited with 1' >&2; exit 1"
    result = run_comparator(["sh", "-c", loud], tmp_path, {"PATH": os.environ["PATH"]}, 60, "test")
    assert result.status == "error" and len(result.output) <= OUTPUT_CAP and "Child exited" in result.output


def test_a_comparator_gone_missing_mid_run_is_an_error_after_one_retry_never_a_verdict(store, theorems, tmp_path, lean):
    backend = open_verifier(settings(tmp_path, lean).model_copy(update={"verification_cache": False}), None)
    try:
        (lean[1] / "comparator").unlink()  # present at preflight, gone when the proof comes
        check = backend.check_proof(theorems[AND_SWAP], AND_SWAP_PROOF)
    finally:
        backend.close()
    verdict = judge(check, AND_SWAP_PROOF)
    assert verdict.status == "error" and check.gold.category == "infrastructure", check.gold


def test_the_landrun_launcher_imports_only_the_standard_library(tmp_path):
    """comparator starts the launcher once per build and export step (four per proof): run as a file it
    loads sandbox.py by its path, never the tasks.lean package (pydantic, the backends' settings), which
    tripled its start-up CPU. Here without bubblewrap (the spec's `bwrap: null`), running `true`."""
    import sys

    from tasks.lean import gold_sandbox

    spec = tmp_path / "gold-sandbox.json"
    spec.write_text(json.dumps({"read_only": [], "work_root": str(tmp_path / "work"), "bwrap": None}))
    argv = [sys.executable, "-I", "-X", "importtime", gold_sandbox.__file__, str(spec), "--best-effort", "--", "true"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    imported = {line.split("|")[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "json" in imported  # -X importtime listed the imports
    assert not {m for m in imported if m.split(".")[0] in ("tasks", "pydantic", "storage")}, sorted(imported)
