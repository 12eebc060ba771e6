"""The `leandojo` backend against a test double of lean-dojo's `Dojo` (the same boundary
as the tracing tests' double: a `lean_dojo` package on the worker's PYTHONPATH), run in
Dojoflow's real worker process. No Lean runs here.

    PYTHONPATH=$PWD .venv/bin/python -m pytest tests/tasks/test_lean_leandojo.py -q
"""

from __future__ import annotations

import os

import pytest

from storage.errors import InputError
from tasks.lean import BackendSettings, judge, open_backend
from tests.doubles.dojo import dojo_received, make_dojo_double
from tests.doubles.lean_process import make_repl_double
from tests.doubles.sample_store import store, theorems  # noqa: F401  (fixtures)

SQUARE_ADD = ["unfold square", "simp only [Nat.add_mul, Nat.mul_add, Nat.two_mul, Nat.mul_comm b a]", "omega"]


@pytest.fixture
def dojo_env(tmp_path, monkeypatch):
    """The Dojo double on the worker's path, a (fake) `lake` on PATH, and a secret in the environment."""
    pkgs = make_dojo_double(tmp_path / "pkgs")
    lake_dir = make_repl_double(tmp_path / "lake").lake_path.parent
    monkeypatch.setenv("PATH", f"{lake_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("GITHUB_ACCESS_TOKEN", "secret-token")
    return pkgs


def dojo_backend(store, pkgs, tmp_path, **settings):
    return open_backend(
        BackendSettings(
            kind="leandojo", work_dir=str(tmp_path / "work"), leandojo={"extra_pythonpath": [str(pkgs)]}, **settings
        ),
        store,
    )


def test_leandojo_runs_tactics_and_checks_proofs_against_dojo_double(store, theorems, dojo_env, tmp_path):
    backend = dojo_backend(store, dojo_env, tmp_path)
    try:
        theorem = theorems["NatBasics.square_add"]
        result = backend.start(theorem)
        assert result.status == "state" and "⊢ square (a + b)" in result.state.goals
        for tactic in SQUARE_ADD[:-1]:
            result = backend.run_tactic(theorem, result.state, tactic)
            assert result.status == "state", result
        assert backend.run_tactic(theorem, result.state, "omega").status == "finished"
        assert backend.run_tactic(theorem, result.state, "rfl").status == "error"
        assert backend.run_tactic(theorem, result.state, "sorry").status == "error"  # ProofGivenUp
        check = backend.check_proof(theorem, "\n".join(SQUARE_ADD))
        # Dojo finished it, but answers no `#print axioms` and no statement check: unverified, never proved
        verdict = judge(check, "\n".join(SQUARE_ADD))
        assert check.accepted and check.checker == "leandojo" and verdict.status == "unverified"
        given_up = backend.check_proof(theorem, "unfold square\nsorry")
        assert not judge(given_up, "unfold square\nsorry").proved
        assert not backend.check_proof(theorem, "unfold square").accepted  # goals left
    finally:
        backend.close()
    received = dojo_received(dojo_env)
    assert received and all("GITHUB_ACCESS_TOKEN" not in r["env_keys"] for r in received)
    assert all(r["cwd"].startswith(str(tmp_path / "work")) for r in received)


def test_dojo_proofs_rechecked_by_repl_count_as_proved_against_dojo_and_repl_doubles(
    store, theorems, dojo_env, tmp_path
):
    """With `recheck: repl`, tactics go to the Dojo and whole proofs to the REPL, whose answers
    (statement check, `#print axioms`) decide; the verdicts are named after the REPL."""
    repl = make_repl_double(tmp_path / "repl")
    backend = dojo_backend(store, dojo_env, tmp_path, recheck="repl", repl=repl.options())
    try:
        theorem = theorems["NatBasics.square_add"]
        assert backend.start(theorem).status == "state"
        check = backend.check_proof(theorem, "\n".join(SQUARE_ADD))
        verdict = judge(check, "\n".join(SQUARE_ADD))
        assert backend.name == "repl" and verdict.proved and check.answers.axioms is not None
    finally:
        backend.close()
    assert ":= NatBasics.square_add" in repl.received() and "#print axioms _dojoflow_check_" in repl.received()


def test_forbidden_construct_never_reaches_dojo_double(store, theorems, dojo_env, tmp_path):
    backend = dojo_backend(store, dojo_env, tmp_path)
    try:
        theorem = theorems["NatBasics.square_add"]
        start = backend.start(theorem)
        assert backend.run_tactic(theorem, start.state, 'elab "x" : tactic => pure ()').status == "error"
        assert not backend.check_proof(theorem, "initialize IO.println 1").accepted
    finally:
        backend.close()
    assert not any("elab" in r["tactic"] or "initialize" in r["tactic"] for r in dojo_received(dojo_env))


def test_crashing_and_hanging_dojo_workers_are_replaced_and_reported_against_dojo_double(
    store, theorems, dojo_env, tmp_path
):
    backend = dojo_backend(store, dojo_env, tmp_path, theorem_timeout_s=60, tactic_timeout_s=1)
    try:
        theorem = theorems["NatBasics.square_add"]
        start = backend.start(theorem)
        crashed = backend.check_proof(theorem, "double_crash")
        assert crashed.error is not None and "crashed" in crashed.error
        hung = backend.run_tactic(theorem, start.state, "double_hang")
        assert hung.status == "timeout" and "hung" in hung.message
        after = backend.run_tactic(theorem, start.state, "unfold square")  # rebuilt on a new worker
        assert after.status == "state"
    finally:
        backend.close()
    pids = {r["pid"] for r in dojo_received(dojo_env) if "double_" in r["tactic"]}
    assert len(pids) == 4  # each tried twice, each time on a new worker


def test_leandojo_not_installed_fails_before_any_work(store, tmp_path, monkeypatch):
    import importlib.util

    if importlib.util.find_spec("lean_dojo") is not None:
        pytest.skip("lean_dojo is installed in this environment")
    with pytest.raises(InputError, match="lean-dojo"):
        open_backend(BackendSettings(kind="leandojo"), store)
