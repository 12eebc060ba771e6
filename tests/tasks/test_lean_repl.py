"""The `repl` backend against the Lean REPL double, which LeanInteract itself launches
(through `local_repl_path` and a fake `lake`): no Lean runs here, and no test claims
Lean checked anything. The double answers from the sample's traced transitions and
known proofs (tests/doubles/lean_process/world.py).

    PYTHONPATH=$PWD .venv/bin/python -m pytest tests/tasks/test_lean_repl.py -q
"""

from __future__ import annotations

import time
from contextlib import contextmanager

import pytest

from storage.errors import InputError
from tasks.lean import BackendSettings, judge, open_backend
from tests.doubles.lean_process import make_repl_double
from tests.doubles.sample_store import store, theorems  # noqa: F401  (fixtures)

SQUARE_ADD = ["unfold square", "simp only [Nat.add_mul, Nat.mul_add, Nat.two_mul, Nat.mul_comm b a]", "omega"]


@contextmanager
def repl_backend(store, double, tmp_path, repl_options: dict | None = None, **settings):
    """The repl backend pointed at `double`, closed afterwards."""
    settings.setdefault("work_dir", str(tmp_path / "work"))
    settings.setdefault("sandbox", double.sandbox())
    backend = open_backend(BackendSettings(kind="repl", repl=double.options(**(repl_options or {})), **settings), store)
    try:
        yield backend
    finally:
        backend.close()


@pytest.fixture
def double(tmp_path):
    return make_repl_double(tmp_path / "double")


@pytest.fixture(scope="module")
def _shared_repl(store, tmp_path_factory):
    # No memory limit: with one, LeanInteract's AutoLeanServer reads the `stat` file of every
    # process on the machine before each request (server.py `_run_dict_backoff` ->
    # utils.py `get_total_memory_usage` -> psutil `children(recursive=True)`), ~3 ms of CPU each,
    # and the traced-proof sweep sends hundreds. None of the shared tests is about memory; the
    # memory limit's tests open their own backend.
    folder = tmp_path_factory.mktemp("shared-repl")
    double = make_repl_double(folder / "double")
    with repl_backend(store, double, folder, memory_limit_mb=None) as backend:
        yield backend, double


@pytest.fixture
def shared(_shared_repl):
    """(backend, requests since this test began): one double and one repl backend with default
    settings but no memory limit (`_shared_repl`) for the module's tests that set none and assert
    nothing about a process's start, a first header or memory, so that each does not start its
    own processes; faults cleared."""
    backend, double = _shared_repl
    double.faults()
    mark = len(double.requests())
    yield backend, lambda: double.requests()[mark:]
    double.faults()


def _text(requests) -> str:
    return "\n".join(r["request"] for r in requests)


def test_repl_backend_finds_states_and_checks_a_known_proof_against_repl_double(store, theorems, double, tmp_path):
    with repl_backend(store, double, tmp_path) as backend:
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
    sent = double.received()
    assert "import NatBasics.Add" in sent  # the theorem's file header, from its checkout
    assert '"proofState": 0, "tactic": "unfold square"' in sent
    # the statement check under a fresh name, then its axioms (tasks/lean/verdict.py, rules 2 and 3)
    assert ":= square_add\\n#print axioms" in sent and "#print axioms _dojoflow_check_" in sent


def test_repl_guard_rejects_sorry_and_native_decide_against_repl_double(theorems, shared):
    backend, since = shared
    theorem = theorems["NatBasics.sumTo_formula"]
    native = backend.check_proof(theorem, "native_decide")  # it compiles and runs code: never sent
    assert not native.accepted and "not sent to Lean" in native.messages[0]
    assert not judge(native, "native_decide").proved
    assert "native_decide" not in _text(since())
    sorry = backend.check_proof(theorem, "sorry")
    assert "sorryAx" in sorry.axioms and any("declaration uses `sorry`" in m for m in sorry.messages)
    assert not judge(sorry, "sorry").proved
    start = backend.start(theorem)
    assert backend.run_tactic(theorem, start.state, "sorry").status == "error"


def test_forbidden_construct_never_reaches_repl_double(theorems, shared):
    backend, since = shared
    theorem = theorems["NatBasics.square_add"]
    start = backend.start(theorem)
    step = backend.run_tactic(theorem, start.state, "run_tac Lean.Elab.Tactic.evalTactic default")
    assert step.status == "error" and "not sent to Lean" in step.message
    check = backend.check_proof(theorem, 'unfold square\n#eval IO.Process.run {cmd := "touch"}')
    assert not check.accepted and "not sent to Lean" in check.messages[0]
    assert not judge(check, "unfold square\n#eval 1").proved
    sent = _text(since())
    assert sent and "run_tac" not in sent and "#eval" not in sent and "IO.Process" not in sent


def test_repl_processes_run_in_their_checkout_with_a_minimal_env_and_a_memory_limit_against_repl_double(
    store, theorems, double, tmp_path, monkeypatch
):
    monkeypatch.setenv("GITHUB_ACCESS_TOKEN", "secret-token")
    monkeypatch.setenv("LEAN_SERVER_API_KEY", "secret-key")
    with repl_backend(store, double, tmp_path, memory_limit_mb=3000) as backend:
        assert backend.start(theorems["NatBasics.square_add"]).status == "state"
    first = double.requests()[0]
    assert "GITHUB_ACCESS_TOKEN" not in first["env_keys"] and "LEAN_SERVER_API_KEY" not in first["env_keys"]
    # elan picks the toolchain from the working directory: the process runs in the checkout
    # (read-only under bubblewrap; its own writable folder is its HOME and TMPDIR).
    assert first["cwd"].endswith("storage/sample/lean/NatBasics")
    assert first["memory_limit"] == 3000 * 1024 * 1024


def test_crashed_repl_process_is_replaced_and_the_step_retried_against_repl_double(store, theorems, tmp_path):
    double = make_repl_double(tmp_path / "double", crash_once_on='"tactic": "unfold square"')
    with repl_backend(store, double, tmp_path) as backend:
        theorem = theorems["NatBasics.square_add"]
        start = backend.start(theorem)
        step = backend.run_tactic(theorem, start.state, "unfold square")
        assert step.status == "state", step  # the second process answered
        assert backend.run_tactic(theorem, step.state, SQUARE_ADD[1]).status == "state"
    # Two processes were started (each has pid 2 in its own PID namespace: count the launches).
    assert len([line for line in double.lake_log.read_text().splitlines() if " env " in line]) == 2


def test_always_crashing_theorem_is_an_error_not_a_failed_proof_against_repl_double(theorems, shared):
    backend, since = shared
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
    crashes = [r for r in since() if "double_crash" in r["request"]]
    assert len(crashes) == 4 and len({r["pid"] for r in crashes}) == 4  # each tried twice, each on a new process


def test_hanging_repl_process_is_killed_and_reported_against_repl_double(store, theorems, double, tmp_path):
    # theorem limit above the tactic limit, both far above the double's answers (milliseconds):
    # each limit is waited out twice (the retry), so they are kept short
    with repl_backend(store, double, tmp_path, tactic_timeout_s=1, theorem_timeout_s=1.5) as backend:
        theorem = theorems["NatBasics.square_add"]
        start = backend.start(theorem)
        hung = backend.run_tactic(theorem, start.state, "double_hang")
        assert hung.status == "timeout" and "hung" in hung.message
        check = backend.check_proof(theorem, "double_hang")
        assert check.error is not None and "hung" in check.error
        assert backend.run_tactic(theorem, start.state, "unfold square").status == "state"  # rebuilt after the kill
    hangs = [r for r in double.requests() if "double_hang" in r["request"]]
    assert len({r["pid"] for r in hangs}) == 4


def test_repl_pool_checks_whole_proofs_on_several_processes_against_repl_double(store, theorems, double, tmp_path):
    with repl_backend(store, double, tmp_path, workers=2) as backend:
        theorem = theorems["LogicPuzzles.de_morgan_classical"]
        proof = "intro h\nby_cases hp : p\nexact Or.inr (fun hq => h ⟨hp, hq⟩)\nexact Or.inl hp"
        check = backend.check_proof(theorem, proof)
        assert check.accepted and set(check.axioms) == {"propext", "Classical.choice", "Quot.sound"}
        assert judge(check, proof).proved
        assert not backend.check_proof(theorem, "intro h\nexact Or.inl hp").accepted
        # LeanServerPool started two REPLs. Counted while the pool is open: the second `lake env`,
        # never sent a request, may not have logged its line yet on a loaded machine, and closing
        # the pool kills it (lean_interact/server.py `kill`) before it would.
        assert launches_reach(double, 2)


def launches_reach(double, count: int, patience_s: float = 120.0) -> bool:
    """Whether the double's fake `lake` has logged `count` REPL launches (`lake env …`) within
    `patience_s`; a bound for a stuck machine, not a timing claim."""
    deadline = time.monotonic() + patience_s
    while True:
        launches = [line for line in double.lake_log.read_text().splitlines() if " env " in line]
        if len(launches) >= count or time.monotonic() > deadline:
            return len(launches) == count
        time.sleep(0.05)


def test_repl_without_lake_fails_before_any_work(store, tmp_path, monkeypatch):
    with pytest.raises(InputError, match="lake") as err:
        open_backend(BackendSettings(kind="repl", repl={"lake_path": str(tmp_path / "no" / "lake")}), store)
    assert "elan" in str(err.value)
    monkeypatch.setenv("PATH", str(tmp_path))  # no `lake` on PATH
    with pytest.raises(InputError, match="no `lake`"):
        open_backend(BackendSettings(kind="repl"), store)


def test_repl_for_a_repository_without_a_checkout_says_how_to_configure_it(store, theorems, double, tmp_path):
    from dataclasses import replace

    with repl_backend(store, double, tmp_path) as backend:
        foreign = replace(theorems["NatBasics.square_add"], url="https://github.com/example/other", repo_id="other")
        result = backend.start(foreign)
        assert result.status == "error" and "backend.repl.projects" in result.message


def test_every_known_proof_is_accepted_and_proved_against_repl_double(theorems, shared):
    from storage.sample.content.known_proofs import KNOWN_PROOFS

    backend, _ = shared
    for kp in KNOWN_PROOFS:
        theorem = theorems[kp.full_name]
        check = backend.check_proof(theorem, kp.proof)
        assert judge(check, kp.proof).proved, (kp.full_name, check)
        assert set(check.axioms) == set(kp.axioms)
        state = backend.start(theorem).state
        for i, tactic in enumerate(kp.tactics):
            step = backend.run_tactic(theorem, state, tactic)
            assert step.status == ("finished" if i == len(kp.tactics) - 1 else "state"), (kp.full_name, step)
            state = step.state


def test_repl_without_lean_interact_says_how_to_install_it(store, double, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "lean_interact", None)  # what Python sees when it is not installed
    with pytest.raises(InputError, match="lean-interact") as err:
        open_backend(BackendSettings(kind="repl", repl=double.options()), store)
    assert "pip install" in str(err.value) and "[lean]" in str(err.value)


def test_every_traced_proof_of_the_sample_is_accepted_against_repl_double(store, theorems, shared):
    """The whole path (file headers, `by sorry`, proof commands, `#print axioms`) on every file of the sample."""
    from tests.doubles.sample_store import traced_proofs

    specs = {(t.repo_id, t.file_path, t.full_name): t for t in theorems.values()}
    backend, _ = shared
    proofs = traced_proofs(store)
    for key, tactics in proofs.items():
        assert backend.start(specs[key]).status == "state", key
        check = backend.check_proof(specs[key], "\n".join(tactics))
        assert judge(check, "\n".join(tactics)).proved, (key, check)
    assert len(proofs) > 150


def test_repl_refuses_a_checkout_of_another_commit(store, theorems, double, tmp_path):
    import subprocess
    from dataclasses import replace

    checkout = tmp_path / "Other"
    checkout.mkdir()
    (checkout / "lean-toolchain").write_text("leanprover/lean4:v4.20.0\n")
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
    }
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "x"]):
        subprocess.run(["git", *args], cwd=checkout, env=env, check=True)
    foreign = replace(
        theorems["NatBasics.square_add"], url="https://github.com/example/Other", repo_id="Other", commit="f" * 40
    )
    with repl_backend(store, double, tmp_path, repl_options={"projects": {"Other": str(checkout)}}) as backend:
        result = backend.start(foreign)
    assert result.status == "error" and "ffffffffffff" in result.message and "git -C" in result.message
    assert double.requests() == []  # refused before any Lean process started


def test_preflight_with_theorems_names_a_repository_without_a_checkout(store, theorems, double):
    from dataclasses import replace

    from tasks.lean import preflight

    settings = BackendSettings(kind="repl", repl=double.options())
    preflight(settings, list(theorems.values()))  # the sample's repositories have their sources
    foreign = replace(theorems["NatBasics.square_add"], url="https://github.com/example/other", repo_id="other")
    with pytest.raises(InputError, match="backend.repl.projects"):
        preflight(settings, [foreign])
    assert double.requests() == []


def test_repl_that_cannot_be_prepared_is_a_clear_error(store, theorems, double, tmp_path):
    with repl_backend(store, double, tmp_path, repl_options={"repl_path": str(tmp_path / "no-repl")}) as backend:
        result = backend.start(theorems["NatBasics.square_add"])
    assert result.status == "error" and "backend.repl" in result.message and "no-repl" in result.message


def test_relative_repl_path_and_cache_dir_are_resolved_before_the_sandbox_moves_the_process(
    store, theorems, double, tmp_path, monkeypatch
):
    """Conformance #16: the sandbox starts each Lean process in another folder (its checkout,
    where elan finds the project's toolchain), where a relative `repl_path` named nothing."""
    monkeypatch.chdir(tmp_path)
    relative = str(double.repl_path.relative_to(tmp_path))
    options = {"repl_path": relative, "cache_dir": "lean-cache"}
    with repl_backend(store, double, tmp_path, repl_options=options) as backend:
        result = backend.start(theorems["NatBasics.square_add"])
    assert result.status == "state", result
    assert double.requests()[0]["cwd"].endswith("storage/sample/lean/NatBasics")  # it did run elsewhere


def test_a_pool_that_cannot_replay_a_state_is_an_error_not_an_exception(store, theorems, double, tmp_path):
    """Conformance #16: LeanServerPool's session cache raises ValueError when replaying a state on a
    restarted process fails (sessioncache.py `_materialize_state`); it must not escape check_proof."""
    theorem = theorems["LogicPuzzles.and_swap'"]
    proof = "intro h\nconstructor\nexact h.2\nexact h.1"
    double.faults(
        {"when": "theorem and_swap'", "do": "grow_memory", "rss_mb": 450, "times": 1},
        {"when": "theorem and_swap'", "do": "message", "text": "Lean error:\nimport failed", "times": 3},
    )
    with repl_backend(store, double, tmp_path, workers=2, memory_limit_mb=512) as backend:
        first = backend.check_proof(theorem, proof)
        second = backend.check_proof(theorem, proof)
    assert judge(first, proof).proved, first
    assert second.error is not None or judge(second, proof).proved, second  # never an exception, never "rejected"


def test_module_header_refusal_is_reported_in_the_check(store, theorems, double, tmp_path):
    import shutil

    from storage.sample import SAMPLE_ROOT

    copy = tmp_path / "LogicPuzzles"
    shutil.copytree(SAMPLE_ROOT / "lean" / "LogicPuzzles", copy)
    props = copy / "LogicPuzzles" / "Props.lean"
    props.write_text("module\n\n" + props.read_text())
    proof = "intro h\nconstructor\nexact h.2\nexact h.1"
    with repl_backend(store, double, tmp_path, repl_options={"projects": {"LogicPuzzles": str(copy)}}) as backend:
        check = backend.check_proof(theorems["LogicPuzzles.and_swap'"], proof)
    assert check.accepted and check.axioms == () and judge(check, proof).proved
    assert any("refused in a `module`" in m for m in check.messages)
    sent = [r["request"] for r in double.requests() if "#print axioms" in r["request"]]
    assert len(sent) == 2 and "module" not in sent[-1].split("namespace")[0]  # again, without the `module` line
