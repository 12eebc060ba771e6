"""The `repl` backend: the Lean REPL (leanprover-community/repl) through LeanInteract.

One `LeanREPLConfig` per traced repository, on its checkout (`LocalProject`), with
Dojoflow's sandbox launcher as `lake_path` (tasks/lean/sandbox.py: bubblewrap, the
project's folder and toolchain read-only, a private folder, no network, limits). Tactic mode: `Command("<statement> := by sorry", env=<file
header>)` gives the initial `proofState`, then `ProofStep`s; each theorem stays on one
`AutoLeanServer` (REPL proof states live in one process). Whole proofs: a `Command` with
the proof and `#print axioms` in one command, on the same servers, or on a `LeanServerPool`
when several workers are configured. Either way a file header is elaborated once per Lean
process, and every check under it reuses its env: on a server, the env id cached per process;
on the pool, the header command is run once through the pool, which records it in its
`ReplaySessionCache` under a session id (pool.py `run`: `add_to_session_cache=True`), and a
check sent with that id goes preferably to a process that holds the header (pool.py
`_try_acquire_worker`), else the header is replayed on the process it goes to, once
(sessioncache.py `get_repl_id` -> `_materialize_state`); a restarted process (crash, memory)
forgets its replays and replays the header again on its next check (server.py
`_run_dict_backoff`: `start()` then `session_cache.reload()`).
A process that crashed, hung, answered garbage, or no longer holds the env / proof state sent
(LeanInteract restarts it for memory inside `run()`, conformance #2) is killed; Dojoflow
rebuilds the lost state on a fresh process (header replayed) and retries once, then reports
an error (ProofCheck.error, or a TacticResult "error"/"timeout"), never a rejection. What
each answer means is tasks/lean/repl_answers.py's. See docs/lean-backends.md.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, replace
from pathlib import Path

from storage.errors import InputError

from .backend import (
    ProofCheck,
    ProofState,
    TacticResult,
    TheoremSpec,
    crash_message,
)
from .closing import heap_frozen
from .config import BackendSettings
from .failures import LeanProcessFailure, retry_once
from .repl_answers import MODULE_REFUSAL, is_error_answer, launcher_reason, read_step, stale_reason
from .repl_project import ReplProject, ReplWorker
from .source import (
    check_alias,
    check_checkout,
    file_header,
    project_dir,
    proof_command,
    sorry_command,
    statement_check_command,
    without_module_header,
)
from .states import LeanProcessBackend, failure_result, refused_check
from .verdict import Answer, Layout, bad_theorem, messages_of, read_answers

# What LeanInteract raises when the process died, hung (it kills it), or answered garbage; and the
# ValueError its pool's session cache raises when it cannot replay a state on another process
# (lean_interact/sessioncache.py `_materialize_state`, conformance #16).
CRASHES = (ConnectionAbortedError, BrokenPipeError, ChildProcessError, json.JSONDecodeError, MemoryError, OSError)
POOL_FAILURES = (*CRASHES, ValueError, RuntimeError)


@dataclass(frozen=True)
class _StateRecord:
    worker: ReplWorker
    pid: int | None
    repl_id: int
    path: tuple[str, ...]  # tactics from the initial state
    goals: str


class ReplBackend(LeanProcessBackend):
    name = "repl"
    work_prefix = "dojoflow-lean-"

    def __init__(self, settings: BackendSettings):
        super().__init__(settings)
        self._projects: dict[Path, ReplProject] = {}
        self._lock = threading.Lock()

    # -- plumbing ------------------------------------------------------------------------
    def _project(self, theorem: TheoremSpec) -> ReplProject:
        directory = project_dir(theorem, self.settings.repl.projects, "backend.repl.projects")
        with self._lock:
            if directory not in self._projects:
                check_checkout(theorem, directory, "backend.repl.projects")
                try:
                    self._projects[directory] = ReplProject(self.settings, directory, self.work_root)
                except InputError:
                    raise
                except Exception as e:  # noqa: BLE001 (LeanInteract raises ValueError, RuntimeError, git errors)
                    raise InputError(
                        "backend.repl",
                        f"LeanInteract could not prepare the REPL for {directory}: {type(e).__name__}: {e}",
                        "check backend.repl.repl_path and lake_path, or "
                        "that the REPL can be cloned and built (it needs the network once)",
                    ) from None
            return self._projects[directory]

    def _run(self, server, request, timeout: float):
        """One request; LeanProcessFailure if the process crashed, hung, answered garbage or lost
        the env / proof state sent (it is killed: the next request starts a new one)."""
        from lean_interact import LeanServerPool

        pool = isinstance(server, LeanServerPool)
        failures = POOL_FAILURES if pool else CRASHES
        try:
            reply = server.run(request, timeout=timeout)
        except TimeoutError as e:
            raise LeanProcessFailure(
                crash_message("hung", f"no answer in {timeout:g} s: {_first_line(e)}"), True
            ) from None
        except failures as e:
            if not pool:  # LeanInteract keeps a process that answered garbage alive: never ask it again
                _kill(server)
            raise LeanProcessFailure(crash_message("crashed", f"{type(e).__name__}: {_first_line(e)}"), False) from None
        capped = launcher_reason(reply)
        if capped is not None:  # the launcher stopped the process: an error with its reason
            if not pool:
                _kill(server)
            raise LeanProcessFailure(crash_message("was stopped", capped), False)
        stale = stale_reason(reply)
        if stale is not None:
            if not pool:  # a pool's requests carry no ids (see _check)
                _kill(server)
            raise LeanProcessFailure(
                crash_message("lost its state", f"it answered {stale!r}, after a restart by LeanInteract"), False
            )
        return reply

    def _header_env(self, worker: ReplWorker, theorem: TheoremSpec, project: ReplProject) -> int | None:
        """The env of the theorem's file header in this worker's current process (cached per process)."""
        from lean_interact import Command
        from lean_interact.interface import LeanError

        header = file_header(theorem, project.directory)
        if not header.strip():
            return None
        key = (worker.pid, theorem.file_path, theorem.start)
        if worker.pid is None or key not in worker.headers:
            reply = self._run(worker.server, Command(cmd=header), self.settings.theorem_timeout_s)
            if isinstance(reply, LeanError) or reply.has_errors():
                raise RuntimeError(f"the file header of {theorem.full_name} does not elaborate: {_reply_text(reply)}")
            key = (worker.pid, theorem.file_path, theorem.start)
            worker.headers = {k: v for k, v in worker.headers.items() if k[0] == worker.pid}
            worker.headers[key] = reply.env
        return worker.headers[key]

    def _pool_header_env(self, pool, theorem: TheoremSpec, project: ReplProject) -> int | None:
        """The session id of the theorem's file header in the pool's session cache: run once
        through the pool, then replayed by the pool on each process that needs it (module doc)."""
        from lean_interact import Command
        from lean_interact.interface import LeanError

        header = file_header(theorem, project.directory)
        if not header.strip():
            return None
        with project.header_lock:
            if header not in project.pool_headers:
                reply = self._run(pool, Command(cmd=header), self.settings.theorem_timeout_s)
                if isinstance(reply, LeanError) or reply.has_errors():
                    pool.session_cache.remove(getattr(reply, "env", 0))
                    raise RuntimeError(
                        f"the file header of {theorem.full_name} does not elaborate: {_reply_text(reply)}"
                    )
                project.pool_headers[header] = reply.env
            return project.pool_headers[header]

    def _open(self, worker: ReplWorker, theorem: TheoremSpec, project: ReplProject) -> _StateRecord:
        """The theorem's `by sorry` in this worker's current process: its proofState and goals."""
        from lean_interact import Command
        from lean_interact.interface import LeanError

        env = self._header_env(worker, theorem, project)
        reply = self._run(worker.server, Command(cmd=sorry_command(theorem), env=env), self.settings.theorem_timeout_s)
        if isinstance(reply, LeanError) or reply.has_errors() or not reply.sorries:
            raise RuntimeError(f"Lean cannot state {theorem.full_name}: {_reply_text(reply)}")
        sorry = reply.sorries[-1]
        return _StateRecord(worker, worker.pid, sorry.proof_state, (), sorry.goal)

    def _current(self, record: _StateRecord, theorem: TheoremSpec, project: ReplProject) -> _StateRecord:
        """`record`'s state in its worker's current process: itself, or, after a restart, the
        theorem opened again and its tactics run again."""
        from lean_interact import ProofStep
        from lean_interact.interface import LeanError

        if record.pid == record.worker.pid and record.pid is not None:
            return record
        repl_id = self._open(record.worker, theorem, project).repl_id
        for tactic in record.path:
            reply = self._run(
                record.worker.server, ProofStep(tactic=tactic, proof_state=repl_id), self.settings.tactic_timeout_s
            )
            if isinstance(reply, LeanError):
                raise RuntimeError(f"replaying `{tactic}` after a restart failed: {reply.message}")
            repl_id = reply.proof_state
        return _StateRecord(record.worker, record.worker.pid, repl_id, record.path, record.goals)

    # -- the interface -------------------------------------------------------------------
    def start(self, theorem: TheoremSpec) -> TacticResult:
        bad = bad_theorem(theorem)
        if bad is not None:
            return TacticResult("error", message=bad)
        try:
            project = self._project(theorem)
            worker = project.worker()
        except InputError as e:
            return TacticResult("error", message=str(e))
        except CRASHES as e:  # the first REPL process did not start
            return TacticResult("error", message=crash_message("did not start", f"{type(e).__name__}: {e}"))
        try:
            record = retry_once(lambda: self._open(worker, theorem, project))
        except (LeanProcessFailure, RuntimeError) as e:
            return failure_result(e)
        finally:
            project.release(worker)
        return TacticResult("state", self._states.remember(record, record.goals, 1))  # one `sorry`: one goal

    def run_tactic(self, theorem: TheoremSpec, state: ProofState, tactic: str) -> TacticResult:
        from lean_interact import ProofStep

        record, refused = self._states.lookup(state, tactic)
        if refused is not None:
            return refused
        project = self._project(theorem)

        def attempt():
            current = self._current(record, theorem, project)
            step = ProofStep(tactic=tactic, proof_state=current.repl_id)
            return current, self._run(current.worker.server, step, self.settings.tactic_timeout_s)

        try:
            current, reply = retry_once(attempt)
        except (LeanProcessFailure, RuntimeError) as e:
            return failure_result(e)
        result = read_step(reply, tactic)
        if result.status != "state":
            return result
        goals = "\n\n".join(reply.goals)
        nxt = _StateRecord(current.worker, current.pid, reply.proof_state, current.path + (tactic,), goals)
        return TacticResult("state", self._states.remember(nxt, goals, len(reply.goals)))

    def check_proof(self, theorem: TheoremSpec, proof: str) -> ProofCheck:
        refused = refused_check(self.name, theorem, proof)
        if refused is not None:
            return refused
        try:
            project = self._project(theorem)
            pool = project.checker()
            worker = None if pool is not None else project.worker()
        except InputError as e:
            return ProofCheck(False, self.name, (), (), error=str(e))
        except CRASHES as e:
            return ProofCheck(
                False, self.name, (), (), error=crash_message("did not start", f"{type(e).__name__}: {e}")
            )
        try:
            return retry_once(lambda: self._check(theorem, proof, project, pool, worker))
        except (LeanProcessFailure, RuntimeError) as e:
            timed_out = isinstance(e, LeanProcessFailure) and e.timed_out  # our limit, not a message
            return ProofCheck(False, self.name, (), (), error=str(e), timed_out=timed_out)
        finally:
            if worker is not None:
                project.release(worker)

    def _check(self, theorem: TheoremSpec, proof: str, project: ReplProject, pool, worker) -> ProofCheck:
        """The proof, the statement check and `#print axioms` in one command (each on lines of its
        own, so every message is read as the answer of the command it is positioned in); after a
        `module` header, where Lean refuses `#print axioms` (lean4#8174), once more with the
        header's `module` line left out, as Lean's message advises."""
        from lean_interact import Command

        timeout = self.settings.theorem_timeout_s
        header = file_header(theorem, project.directory)
        alias = check_alias()
        tail = check_tail(theorem, proof, alias)
        if pool is not None:  # the header's session id: the pool replays it where it is missing
            server, env, lead = pool, self._pool_header_env(pool, theorem, project), ""
        else:
            server, env, lead = worker.server, self._header_env(worker, theorem, project), ""
        check = self._read(server, Command(cmd=lead + tail, env=env), lead, tail, alias, timeout)
        if check.answers is not None and _refused_in_module(check.answers.axioms) and check.accepted:
            outside = without_module_header(header)
            retried = self._read(server, Command(cmd=outside + tail, env=None), outside, tail, alias, timeout)
            note = "info: `#print axioms` is refused in a `module`; read with the file's `module` line left out"
            if retried.accepted:
                check = replace(retried, messages=retried.messages + (note,))
        return check

    def _read(self, server, request, lead: str, tail: str, alias: str, timeout: float) -> ProofCheck:
        from lean_interact import LeanServerPool

        reply = self._run(server, request, timeout)
        if isinstance(server, LeanServerPool) and isinstance(getattr(reply, "env", None), int):
            # The pool records every answer in its session cache (pool.py `run`); a check's env is
            # never used again, and would otherwise be kept (with its request) for the run's life.
            server.session_cache.remove(reply.env)
        return read_check_reply(reply, lead, tail, alias)

    def close(self) -> None:
        with heap_frozen():  # the servers' kill and __del__ each run a full collection otherwise
            _close_projects(self._projects)  # its frame (the last project) is freed inside the freeze
            self._states.clear()
        self._root.remove()


def _close_projects(projects: dict) -> None:
    for project in projects.values():
        project.close()
    projects.clear()


def _kill(server) -> None:
    """Stop a LeanInteract server that failed, without its full garbage collection (tasks/lean/closing.py)."""
    with heap_frozen():
        server.kill()


def check_tail(theorem: TheoremSpec, proof: str, alias: str) -> str:
    """What follows the header in a whole-proof check: the proof, the statement check under
    `alias`, and `#print axioms alias`, each on lines of its own."""
    return f"{proof_command(theorem, proof)}{statement_check_command(theorem, alias)}\n#print axioms {alias}"


def _first_line(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [""])[0]


def _refused_in_module(answer: Answer | None) -> bool:
    """`#print axioms` refused after a `module` header (Print.lean, lean4#8174; conformance #10)."""
    return answer is not None and any(
        m.severity == "error" and m.text.startswith(MODULE_REFUSAL) for m in answer.messages
    )


def read_check_reply(reply, lead: str, tail: str, alias: str) -> ProofCheck:
    """The answer to `lead + tail` (one command: the header sent with it or "", the proof, the
    statement check and `#print axioms ALIAS`), split into its commands' answers by position."""
    if is_error_answer(reply):  # the REPL could not run the command at all: no verdict
        return ProofCheck(False, "repl", (), (), error=f"the Lean REPL could not run the check: {reply.message}")
    layout = Layout.of(lead + tail, alias).with_header(lead.count("\n"))
    return read_answers("repl", messages_of(reply.messages), layout, alias)


def _reply_text(reply) -> str:
    if hasattr(reply, "message") and not hasattr(reply, "messages"):
        return reply.message
    return "; ".join(f"{m.severity}: {m.data}" for m in getattr(reply, "messages", [])) or "no message"


def open_repl(settings: BackendSettings, store):
    """The repl backend's `opener` (tasks/lean/registry.py)."""
    return ReplBackend(settings)
