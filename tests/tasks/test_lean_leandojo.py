"""The `leandojo` backend against lean-dojo's real, unmodified `Dojo` class (lean-dojo 4.20.0),
run in Dojoflow's real worker process; only the Lean process is a double: a fake `lake` whose
`lake env lean FILE` speaks `Lean4Repl`'s line protocol (tests/doubles/dojo_lean/). No Lean runs.

    PYTHONPATH=$PWD .venv/bin/python -m pytest tests/tasks/test_lean_leandojo.py -q
"""

from __future__ import annotations

import os

import pytest

from storage.errors import InputError
from tasks.lean import BackendSettings, judge, open_backend
from tasks.lean.dojo_repo import find_traced_repo
from tests.doubles.dojo_lean import make_dojo_lean
from tests.doubles.sample_store import store, theorems  # noqa: F401  (fixtures)

pytest.importorskip("lean_dojo", reason="lean-dojo 4.20.0 (the dev extra) drives these tests")

SQUARE_ADD = ["unfold square", "simp only [Nat.add_mul, Nat.mul_add, Nat.two_mul, Nat.mul_comm b a]", "omega"]


@pytest.fixture
def dojo_lean(tmp_path, monkeypatch):
    """The Lean double behind a fake `lake` on PATH, a traced sample in lean-dojo's cache, and a
    secret in the environment that must never reach Lean."""
    double = make_dojo_lean(tmp_path / "dojo", repos=("NatBasics",))
    monkeypatch.setenv("PATH", f"{double.bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("GITHUB_ACCESS_TOKEN", "secret-token")
    return double


def dojo_backend(store, double, tmp_path, **settings):
    options = {"cache_dir": str(double.cache_dir), **settings.pop("leandojo", {})}
    sandbox = settings.pop("sandbox", None) or double.sandbox()
    return open_backend(
        BackendSettings(
            kind="leandojo", work_dir=str(tmp_path / "work"), leandojo=options, sandbox=sandbox, **settings
        ),
        store,
    )


@pytest.fixture(scope="module")
def _shared_dojo(store, tmp_path_factory):
    folder = tmp_path_factory.mktemp("shared-dojo")
    with pytest.MonkeyPatch.context() as mp:  # as the `dojo_lean` fixture, for the module
        double = make_dojo_lean(folder / "dojo", repos=("NatBasics",))
        mp.setenv("PATH", f"{double.bin_dir}{os.pathsep}{os.environ['PATH']}")
        mp.setenv("GITHUB_ACCESS_TOKEN", "secret-token")
        backend = dojo_backend(store, double, folder)
        try:
            yield backend, double
        finally:
            backend.close()


@pytest.fixture
def shared(_shared_dojo):
    """(backend, double): one `dojo_lean` double and one leandojo backend with default settings
    for the module's tests that set none and count no Dojo starts of their own, so that each does
    not start its own worker (lean-dojo's import); faults cleared."""
    backend, double = _shared_dojo
    double.faults()
    yield backend, double
    double.faults()


def lean_starts(double) -> int:
    return sum(1 for r in double.events() if "argv" in r)


def test_real_dojo_runs_tactics_and_checks_multi_tactic_proofs(theorems, shared):
    backend, dojo_lean = shared
    theorem = theorems["NatBasics.square_add"]
    result = backend.start(theorem)
    assert result.status == "state" and "⊢ square (a + b)" in result.state.goals
    for tactic in SQUARE_ADD[:-1]:
        result = backend.run_tactic(theorem, result.state, tactic)
        assert result.status == "state", result
    assert backend.run_tactic(theorem, result.state, "omega").status == "finished"
    assert backend.run_tactic(theorem, result.state, "rfl").status == "error"
    assert backend.run_tactic(theorem, result.state, "sorry").status == "error"  # ProofGivenUp
    # mismatch #3: Lean4Repl parses ONE tactic per request; a whole proof goes one tactic at a time
    proof = "\n".join(SQUARE_ADD)
    check = backend.check_proof(theorem, proof)
    # Dojo finished it, but answers no `#print axioms` and no statement check: unverified, never proved
    assert check.accepted and check.checker == "leandojo" and judge(check, proof).status == "unverified", check
    assert dojo_lean.tactics()[-3:] == SQUARE_ADD
    given_up = backend.check_proof(theorem, "unfold square\nsorry")
    assert not judge(given_up, "unfold square\nsorry").proved
    left = backend.check_proof(theorem, "unfold square")
    assert not left.accepted and left.error is None and "unsolved goals" in left.messages[0]
    extra = backend.check_proof(theorem, proof + "\nrfl")  # a tactic after the proof finished
    assert not extra.accepted and "no goals" in extra.messages[0]
    # best-first search's path goes as its steps, never re-split from joined text
    assert backend.check_steps(theorem, tuple(SQUARE_ADD)).accepted
    received = dojo_lean.events()
    assert received and all("GITHUB_ACCESS_TOKEN" not in r["env_keys"] for r in received)


def test_late_answer_of_a_timed_out_tactic_is_never_read_as_the_next(store, theorems, dojo_lean, tmp_path):
    """Mismatch #1: `double_late` closes the goal but answers after the timeout. lean-dojo keeps the
    stream, so a Dojo used again would return that `no goals` for the next tactic: `garbage` proved."""
    # no answer is slow but the late one, and each timeout waits the limit out (4 here): 1 s, as
    # the backend contract's late-answer test (tests/lean/test_backend_contract.py)
    backend = dojo_backend(store, dojo_lean, tmp_path, tactic_timeout_s=1)
    try:
        theorem = theorems["NatBasics.square_add"]
        start = backend.start(theorem)
        late = backend.run_tactic(theorem, start.state, "double_late")  # late on the retry too
        assert late.status == "timeout", late
        garbage = backend.run_tactic(theorem, start.state, "garbage_tactic")
        assert garbage.status == "error", garbage  # not "finished"
        assert backend.run_tactic(theorem, start.state, "unfold square").status == "state"
        check = backend.check_proof(theorem, "double_late\ngarbage_tactic")
        assert not check.accepted and check.error is not None  # a timeout: an error, not proved
        assert not backend.check_proof(theorem, "garbage_tactic").accepted
    finally:
        backend.close()
    assert lean_starts(dojo_lean) >= 3  # the Dojo was closed after each timeout and opened anew


def test_a_dojo_crash_is_retried_once_on_a_fresh_dojo_and_is_an_error(theorems, shared):
    """Mismatch #11 (second half): `DojoCrashError` is an infrastructure error, never a rejection."""
    backend, dojo_lean = shared
    theorem = theorems["NatBasics.square_add"]
    start = backend.start(theorem)
    step = backend.run_tactic(theorem, start.state, "unfold square")
    before = lean_starts(dojo_lean)
    crashed = backend.run_tactic(theorem, step.state, "double_crash")
    assert crashed.status == "error" and "crashed" in crashed.message, crashed
    # sent twice: on the theorem's Dojo, then once more on a fresh one (the state replayed), then given up
    assert dojo_lean.tactics().count("double_crash") == 2 and lean_starts(dojo_lean) == before + 1
    check = backend.check_proof(theorem, "unfold square\ndouble_crash")
    assert not check.accepted and check.error is not None and check.messages == (), check
    after = backend.run_tactic(theorem, step.state, SQUARE_ADD[1])  # the state is rebuilt on a new Dojo
    assert after.status == "state", after


def test_dojo_start_has_its_own_time_limit(store, theorems, dojo_lean, tmp_path):
    """Mismatch #11: the Dojo's start (imports, file prefix) is not bounded by the tactic limit."""
    (next(dojo_lean.cache_dir.glob("gitpython-NatBasics-*")) / "NatBasics" / "DOUBLE_SLOW_START").write_text("1")
    # a start of 1 s or more, four times the tactic limit: only the hang waits on that limit
    backend = dojo_backend(store, dojo_lean, tmp_path, tactic_timeout_s=0.25, leandojo={"start_timeout_s": 120})
    try:
        theorem = theorems["NatBasics.square_add"]
        start = backend.start(theorem)
        assert start.status == "state", start
        assert backend.run_tactic(theorem, start.state, "double_hang").status == "timeout"  # tactics keep their 0.25 s
    finally:
        backend.close()
    assert BackendSettings().leandojo.start_timeout_s >= 600


def test_dojo_opens_what_tracing_built_and_never_traces(store, theorems, dojo_lean, tmp_path):
    """Mismatch #5: the Dojo finds the traced local checkout in lean-dojo's cache (no GitHub
    lookup, no re-trace); a repository that is not there is one clear error."""
    theorem = theorems["NatBasics.square_add"]
    found = find_traced_repo(dojo_lean.cache_dir, theorem.url, theorem.commit)
    assert found.traced_dir.name == "NatBasics" and found.lean_toolchain.endswith("v4.20.0")
    backend = dojo_backend(store, dojo_lean, tmp_path)
    try:
        assert backend.start(theorem).status == "state"
        other = theorems["ListLemmas.rev_snoc_snoc"]  # not in this cache
        missing = backend.start(other)
        assert missing.status == "error" and "no traced repository" in missing.message
        assert "lean_dojo_cache" in missing.message  # the fix
    finally:
        backend.close()
    starts = [r for r in dojo_lean.events() if "argv" in r]
    assert len(starts) == 1 and starts[0]["cwd"] == str(found.traced_dir)
    with pytest.raises(InputError, match="no traced repository"):
        find_traced_repo(tmp_path / "empty", theorem.url, theorem.commit)


def test_forbidden_construct_never_reaches_the_dojo(theorems, shared):
    backend, dojo_lean = shared
    theorem = theorems["NatBasics.square_add"]
    start = backend.start(theorem)
    assert backend.run_tactic(theorem, start.state, 'elab "x" : tactic => pure ()').status == "error"
    assert not backend.check_proof(theorem, "initialize IO.println 1").accepted
    assert not any("elab" in t or "initialize" in t for t in dojo_lean.tactics())


def test_leandojo_not_installed_fails_before_any_work(store, tmp_path, monkeypatch):
    import importlib.util

    if importlib.util.find_spec("lean_dojo") is not None:
        pytest.skip("lean_dojo is installed in this environment")
    with pytest.raises(InputError, match="lean-dojo"):
        open_backend(BackendSettings(kind="leandojo"), store)


def test_best_first_search_proves_a_multi_tactic_theorem_through_the_real_dojo(theorems, shared):
    """Mismatch #3 in search: the found path is re-checked as a whole proof (`_accept`), one tactic
    per Dojo request; joined into one block, Lean4Repl would refuse it ("expected end of input")."""
    backend, dojo_lean = shared
    from tasks.search import SearchBudget, best_first_search
    from tests.tasks.test_search import ScriptedGenerator

    table = {
        "⊢ square (a + b)": [(SQUARE_ADD[0], -0.1)],
        "⊢ (a + b) * (a + b)": [(SQUARE_ADD[1], -0.1)],
        "⊢ a * a + a * b": [(SQUARE_ADD[2], -0.1)],
    }
    theorem = theorems["NatBasics.square_add"]
    result = best_first_search(theorem, backend, ScriptedGenerator(table), SearchBudget(num_tactics=1))
    # Lean finished it on the Dojo, which reports no axioms: unverified, kept out of pass@k
    assert result.stopped == "unverified" and result.successes == 0, result
    assert result.unverified == ("\n".join(SQUARE_ADD),)
    assert all("\n" not in t for t in dojo_lean.tactics())  # every request one tactic


def test_dojo_proofs_rechecked_by_repl_count_as_proved(store, theorems, dojo_lean, tmp_path):
    """With `recheck: repl`, tactics go to the Dojo and whole proofs to the REPL (its Lean process
    double), whose answers (statement check, `#print axioms`) decide; verdicts are named after it."""
    from tests.doubles.lean_process import make_repl_double

    repl = make_repl_double(tmp_path / "repl")
    # one sandbox for both doubles: each one's folder writable (real Lean needs none of these)
    writable = dojo_lean.sandbox()["writable_paths"] + repl.sandbox()["writable_paths"]
    backend = dojo_backend(
        store,
        dojo_lean,
        tmp_path,
        recheck="repl",
        repl=repl.options(),
        sandbox=dojo_lean.sandbox(writable_paths=writable),
    )
    try:
        theorem = theorems["NatBasics.square_add"]
        assert backend.start(theorem).status == "state"
        check = backend.check_proof(theorem, "\n".join(SQUARE_ADD))
        assert backend.name == "repl" and judge(check, "\n".join(SQUARE_ADD)).proved
    finally:
        backend.close()
    assert ":= square_add\\n#print axioms" in repl.received() and "#print axioms _dojoflow_check_" in repl.received()


def test_the_dojos_process_takes_the_tactic_limit_and_sends_each_request_at_once(tmp_path):
    """The worker tunes lean-dojo's pexpect process for tactics: the tactic limit as its
    timeout, and no `delaybeforesend` sleep (50 ms before every request otherwise); a request
    sent at once still arrives whole (`cat` echoes it, as Lean4Repl reads one line)."""
    import pexpect

    from tasks.lean.leandojo_worker import tune_for_tactics

    proc = pexpect.spawn("cat", timeout=600, maxread=1, encoding="utf-8", echo=False)  # as dojo.py spawns Lean
    try:
        assert proc.delaybeforesend == 0.05  # pexpect's default, which the Dojo keeps
        tune_for_tactics(proc, 2.5)
        assert proc.timeout == 2.5 and proc.delaybeforesend is None
        proc.sendline('{"sid": 0, "cmd": "unfold square"}')
        assert proc.readline().strip() == '{"sid": 0, "cmd": "unfold square"}'
    finally:
        proc.terminate(force=True)
