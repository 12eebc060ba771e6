"""The `repl` backend against the Lean REPL double, which LeanInteract itself launches
(through `local_repl_path` and a fake `lake`): no Lean runs here, and no test claims
Lean checked anything. The double answers from the sample's traced transitions and
known proofs (tests/doubles/lean_world.py).

    PYTHONPATH=$PWD .venv/bin/python -m pytest tests/tasks/test_lean_repl.py -q
"""

from __future__ import annotations

import pytest

from storage.errors import InputError
from tasks.lean import BackendSettings, judge, load_theorems, open_backend
from tests.doubles.lean_repl import make_repl_double
from tests.doubles.sample_store import sample_store

SQUARE_ADD = ["unfold square", "simp only [Nat.add_mul, Nat.mul_add, Nat.two_mul, Nat.mul_comm b a]", "omega"]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return sample_store(tmp_path_factory.mktemp("home"))


@pytest.fixture(scope="module")
def theorems(store):
    return {t.full_name: t for t in load_theorems(store)}


def repl_backend(store, double, tmp_path, **settings):
    settings.setdefault("work_dir", str(tmp_path / "work"))
    return open_backend(BackendSettings(kind="repl", repl=double.options(), **settings), store)


@pytest.fixture
def double(tmp_path):
    return make_repl_double(tmp_path / "double")


def test_repl_backend_finds_states_and_checks_a_known_proof_against_repl_double(store, theorems, double, tmp_path):
    backend = repl_backend(store, double, tmp_path)
    try:
        theorem = theorems["NatBasics.square_add"]  # `sorry` in the traced data; its proof is known to the double
        result = backend.start(theorem)
        assert result.status == "state"
        assert result.state.goals == "a b : Nat\n⊢ square (a + b) = square a + 2 * a * b + square b"
        for tactic in SQUARE_ADD[:-1]:
            result = backend.run_tactic(theorem, result.state, tactic)
            assert result.status == "state", result
        assert backend.run_tactic(theorem, result.state, "omega").status == "finished"
        wrong = backend.run_tactic(theorem, result.state, "rfl")
        assert wrong.status == "error" and "rfl" in wrong.message
        check = backend.check_proof(theorem, "\n".join(SQUARE_ADD))
        assert check.accepted and check.checker == "repl" and check.axioms == ("propext",)
        assert judge(check, "\n".join(SQUARE_ADD)).proved
        rejected = backend.check_proof(theorem, "unfold square\nrfl")
        assert not rejected.accepted and rejected.error is None and any("error" in m for m in rejected.messages)
    finally:
        backend.close()
    sent = double.received()
    assert "import NatBasics.Add" in sent  # the theorem's file header, from its checkout
    assert '"proofState": 0, "tactic": "unfold square"' in sent
    assert "#print axioms NatBasics.square_add" in sent


def test_repl_guard_rejects_sorry_and_native_decide_against_repl_double(store, theorems, double, tmp_path):
    backend = repl_backend(store, double, tmp_path)
    try:
        theorem = theorems["NatBasics.sumTo_formula"]
        native = backend.check_proof(theorem, "native_decide")
        assert native.accepted and "Lean.ofReduceBool" in native.axioms
        assert not judge(native, "native_decide").proved
        sorry = backend.check_proof(theorem, "sorry")
        assert "sorryAx" in sorry.axioms and any("declaration uses `sorry`" in m for m in sorry.messages)
        assert not judge(sorry, "sorry").proved
        start = backend.start(theorem)
        assert backend.run_tactic(theorem, start.state, "sorry").status == "error"
    finally:
        backend.close()


def test_forbidden_construct_never_reaches_repl_double(store, theorems, double, tmp_path):
    backend = repl_backend(store, double, tmp_path)
    try:
        theorem = theorems["NatBasics.square_add"]
        start = backend.start(theorem)
        step = backend.run_tactic(theorem, start.state, "run_tac Lean.Elab.Tactic.evalTactic default")
        assert step.status == "error" and "not sent to Lean" in step.message
        check = backend.check_proof(theorem, "unfold square\n#eval IO.Process.run {cmd := \"touch\"}")
        assert not check.accepted and "not sent to Lean" in check.messages[0]
        assert not judge(check, "unfold square\n#eval 1").proved
    finally:
        backend.close()
    sent = double.received()
    assert sent and "run_tac" not in sent and "#eval" not in sent and "IO.Process" not in sent


def test_repl_processes_get_their_own_folder_a_minimal_env_and_a_memory_limit_against_repl_double(
        store, theorems, double, tmp_path, monkeypatch):
    monkeypatch.setenv("GITHUB_ACCESS_TOKEN", "secret-token")
    monkeypatch.setenv("LEAN_SERVER_API_KEY", "secret-key")
    backend = repl_backend(store, double, tmp_path, memory_limit_mb=3000)
    try:
        assert backend.start(theorems["NatBasics.square_add"]).status == "state"
    finally:
        backend.close()
    first = double.requests()[0]
    assert "GITHUB_ACCESS_TOKEN" not in first["env_keys"] and "LEAN_SERVER_API_KEY" not in first["env_keys"]
    assert first["cwd"].startswith(str(tmp_path / "work"))
    assert "storage/sample" not in first["cwd"]  # not the repository's checkout
    assert first["memory_limit"] == 3000 * 1024 * 1024


def test_crashed_repl_process_is_replaced_and_the_step_retried_against_repl_double(store, theorems, tmp_path):
    double = make_repl_double(tmp_path / "double", crash_once_on='"tactic": "unfold square"')
    backend = repl_backend(store, double, tmp_path)
    try:
        theorem = theorems["NatBasics.square_add"]
        start = backend.start(theorem)
        step = backend.run_tactic(theorem, start.state, "unfold square")
        assert step.status == "state", step  # the second process answered
        assert backend.run_tactic(theorem, step.state, SQUARE_ADD[1]).status == "state"
    finally:
        backend.close()
    pids = {r["pid"] for r in double.requests()}
    assert len(pids) == 2


def test_always_crashing_theorem_is_an_error_not_a_failed_proof_against_repl_double(store, theorems, double, tmp_path):
    backend = repl_backend(store, double, tmp_path)
    try:
        theorem = theorems["NatBasics.square_add"]
        check = backend.check_proof(theorem, "unfold square\ndouble_crash")
        assert check.error is not None and "crashed" in check.error and not check.accepted
        verdict = judge(check, "unfold square\ndouble_crash")
        assert not verdict.proved and verdict.reason.startswith("not checked")
        start = backend.start(theorem)
        crashed = backend.run_tactic(theorem, start.state, "double_crash")
        assert crashed.status == "error" and "crashed" in crashed.message
        # The replaced process serves the next theorem.
        assert backend.check_proof(theorem, "\n".join(SQUARE_ADD)).accepted
    finally:
        backend.close()
    crashes = [r for r in double.requests() if "double_crash" in r["request"]]
    assert len(crashes) == 4 and len({r["pid"] for r in crashes}) == 4  # each tried twice, each on a new process


def test_hanging_repl_process_is_killed_and_reported_against_repl_double(store, theorems, double, tmp_path):
    backend = repl_backend(store, double, tmp_path, tactic_timeout_s=3, theorem_timeout_s=6)
    try:
        theorem = theorems["NatBasics.square_add"]
        start = backend.start(theorem)
        hung = backend.run_tactic(theorem, start.state, "double_hang")
        assert hung.status == "timeout" and "hung" in hung.message
        check = backend.check_proof(theorem, "double_hang")
        assert check.error is not None and "hung" in check.error
        assert backend.run_tactic(theorem, start.state, "unfold square").status == "state"  # rebuilt after the kill
    finally:
        backend.close()
    hangs = [r for r in double.requests() if "double_hang" in r["request"]]
    assert len({r["pid"] for r in hangs}) == 4


def test_repl_pool_checks_whole_proofs_on_several_processes_against_repl_double(store, theorems, double, tmp_path):
    backend = repl_backend(store, double, tmp_path, workers=2)
    try:
        theorem = theorems["LogicPuzzles.de_morgan_classical"]
        proof = "intro h\nby_cases hp : p\nexact Or.inr (fun hq => h ⟨hp, hq⟩)\nexact Or.inl hp"
        check = backend.check_proof(theorem, proof)
        assert check.accepted and set(check.axioms) == {"propext", "Classical.choice", "Quot.sound"}
        assert judge(check, proof).proved
        assert not backend.check_proof(theorem, "intro h\nexact Or.inl hp").accepted
    finally:
        backend.close()
    launches = [line for line in double.lake_log.read_text().splitlines() if " env " in line]
    assert len(launches) == 2  # LeanServerPool started two REPLs


def test_repl_without_lake_fails_before_any_work(store, tmp_path, monkeypatch):
    with pytest.raises(InputError, match="lake") as err:
        open_backend(BackendSettings(kind="repl", repl={"lake_path": str(tmp_path / "no" / "lake")}), store)
    assert "elan" in str(err.value)
    monkeypatch.setenv("PATH", str(tmp_path))  # no `lake` on PATH
    with pytest.raises(InputError, match="no `lake`"):
        open_backend(BackendSettings(kind="repl"), store)


def test_repl_for_a_repository_without_a_checkout_says_how_to_configure_it(store, theorems, double, tmp_path):
    from dataclasses import replace

    backend = repl_backend(store, double, tmp_path)
    try:
        foreign = replace(theorems["NatBasics.square_add"], url="https://github.com/example/other", repo_id="other")
        result = backend.start(foreign)
        assert result.status == "error" and "backend.repl.projects" in result.message
    finally:
        backend.close()
