"""The `leandojo` backend: lean-dojo's `Dojo` on a traced repository, for users who
trace with LeanDojo.

`Dojo` runs in a worker process (tasks/lean/leandojo_worker.py) started in a folder of
its own, with a minimal environment (lean-dojo reads tokens from the environment; the
worker never gets them) and a memory limit. Each request has a wall-clock limit; a
worker that crashes or hangs is killed and replaced, the theorem is opened again, its
tactics replayed and the request retried once, then reported as an error.
`TacticState` -> "state", `ProofFinished` -> "finished", `LeanError` -> "error",
`ProofGivenUp` (a `sorry`) -> "error". Whole proofs are run as one tactic block from the
initial state; Dojo neither checks the statement nor reports axioms, so its finished
proofs are `unverified` (tasks/lean/verdict.py) unless a whole-proof backend re-checks
them (`backend.recheck`, tasks/lean/recheck.py; docs/lean-backends.md).
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from tasks.tracing.toolchain import minimal_env

from .backend import (
    SORRY_TACTIC,
    ProofCheck,
    ProofState,
    TacticResult,
    TheoremSpec,
    crash_message,
    forbidden_message,
)
from .config import BackendSettings
from .failures import LeanProcessFailure, retry_once
from .guard import forbidden_construct
from .sandbox import limit_memory
from .states import ProofStates, failure_result
from .verdict import Answer, Message, bad_input, bad_theorem, proof_check

DOJOFLOW_ROOT = Path(__file__).resolve().parents[2]


class _DojoProcess:
    """The worker process, replaced when it dies or hangs (`generation` counts replacements)."""

    def __init__(self, settings: BackendSettings, work_root: Path):
        self.settings = settings
        self.work_root = work_root
        self.proc: subprocess.Popen | None = None
        self.generation = 0
        self.lock = threading.Lock()

    def _start(self) -> None:
        cwd = Path(tempfile.mkdtemp(prefix="dojo-", dir=self.work_root))
        paths = [str(DOJOFLOW_ROOT), *self.settings.leandojo.extra_pythonpath]
        extra = {"PYTHONPATH": os.pathsep.join(paths)}
        cache = self.settings.leandojo.cache_dir or os.environ.get("CACHE_DIR")
        if cache:  # where tracing left the built repository: Dojo reuses it instead of building again
            extra["CACHE_DIR"] = str(Path(cache).expanduser())
        env = minimal_env(extra=extra)
        memory = self.settings.memory_limit_mb
        self.log = open(cwd / "worker.log", "w", encoding="utf-8")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tasks.lean.leandojo_worker"],
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
            encoding="utf-8",
            bufsize=1,
            start_new_session=True,
            preexec_fn=lambda: limit_memory(memory),
        )
        self.lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, args=(self.proc, self.lines), daemon=True).start()
        self.generation += 1

    @staticmethod
    def _read(proc: subprocess.Popen, lines: queue.Queue) -> None:
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)  # EOF: the process is gone

    def kill(self) -> None:
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.wait()
        self.log.close()
        self.proc = None

    def current_generation(self) -> int:
        """The generation of the process that serves the next request (started now if needed)."""
        with self.lock:
            if self.proc is None or self.proc.poll() is not None:
                self.kill()
                self._start()
            return self.generation

    def request(self, req: dict, timeout: float) -> dict:
        self.current_generation()
        with self.lock:
            try:
                self.proc.stdin.write(json.dumps(req, ensure_ascii=False) + "\n")
                self.proc.stdin.flush()
                line = self.lines.get(timeout=timeout)
            except queue.Empty:
                self.kill()
                raise LeanProcessFailure(crash_message("hung", f"no answer in {timeout:g} s"), True) from None
            except OSError:  # the pipe broke: the process is gone
                line = None
            if line is None:
                code = self.proc.poll()
                self.kill()
                raise LeanProcessFailure(crash_message("crashed", f"exit code {code}"), False)
            reply = json.loads(line)
            if reply.get("status") == "crashed":  # Dojo's own Lean process died (DojoCrashError)
                raise LeanProcessFailure(reply["message"], False)
            return reply


@dataclass(frozen=True)
class _State:
    theorem_key: str
    generation: int
    dojo_id: int
    path: tuple[str, ...]
    goals: str


class LeanDojoBackend:
    name = "leandojo"

    def __init__(self, settings: BackendSettings):
        self.settings = settings
        self._own_root = settings.work_dir is None
        self.work_root = Path(settings.work_dir or tempfile.mkdtemp(prefix="dojoflow-dojo-"))
        self.work_root.mkdir(parents=True, exist_ok=True)
        self.process = _DojoProcess(settings, self.work_root)
        self._states = ProofStates()
        self._opened: dict[str, tuple[int, int, str]] = {}  # theorem key -> (generation, s0 id, pp)

    @staticmethod
    def _key(theorem: TheoremSpec) -> str:
        return f"{theorem.repo_id}:{theorem.file_path}:{theorem.full_name}"

    def _open(self, theorem: TheoremSpec) -> tuple[int, int, str]:
        """(generation, initial state id, its goals) of the theorem in the current worker."""
        key = self._key(theorem)
        opened = self._opened.get(key)
        if opened is not None and opened[0] == self.process.current_generation():
            return opened
        opts = self.settings.leandojo
        reply = self.process.request(
            {
                "op": "start",
                "key": key,
                "timeout": self.settings.tactic_timeout_s,
                "theorem": {
                    "url": theorem.url,
                    "commit": theorem.commit,
                    "file_path": theorem.file_path,
                    "full_name": theorem.full_name,
                },
                "additional_imports": opts.additional_imports,
                "build_deps": opts.build_deps,
            },
            self.settings.theorem_timeout_s,
        )
        if reply["status"] != "state":
            raise RuntimeError(reply.get("message", "Dojo could not start the theorem"))
        self._opened[key] = (self.process.generation, reply["id"], reply["pp"])
        return self._opened[key]

    def _current(self, state: _State, theorem: TheoremSpec) -> _State:
        if state.generation == self.process.current_generation():
            return state
        generation, dojo_id, _ = self._open(theorem)
        for tactic in state.path:
            reply = self._tac(theorem, dojo_id, tactic)
            if reply["status"] != "state":
                raise RuntimeError(f"replaying `{tactic}` after a restart failed: {reply.get('message', reply)}")
            dojo_id = reply["id"]
        return _State(state.theorem_key, generation, dojo_id, state.path, state.goals)

    def _tac(self, theorem: TheoremSpec, dojo_id: int, tactic: str) -> dict:
        return self.process.request(
            {"op": "run_tac", "key": self._key(theorem), "id": dojo_id, "tactic": tactic},
            # Dojo enforces the tactic limit itself; this is the backstop for a hung worker.
            max(2 * self.settings.tactic_timeout_s, self.settings.tactic_timeout_s + 5),
        )

    def start(self, theorem: TheoremSpec) -> TacticResult:
        bad = bad_theorem(theorem)
        if bad is not None:
            return TacticResult("error", message=bad)
        try:
            generation, dojo_id, pp = retry_once(lambda: self._open(theorem))
        except (LeanProcessFailure, RuntimeError) as e:
            return failure_result(e)
        return TacticResult("state", self._states.remember(_State(self._key(theorem), generation, dojo_id, (), pp), pp))

    def run_tactic(self, theorem: TheoremSpec, state: ProofState, tactic: str) -> TacticResult:
        record, refused = self._states.lookup(state, tactic)
        if refused is not None:
            return refused

        def attempt():
            current = self._current(record, theorem)
            return current, self._tac(theorem, current.dojo_id, tactic)

        try:
            current, reply = retry_once(attempt)
        except (LeanProcessFailure, RuntimeError) as e:
            return failure_result(e)
        status = reply["status"]
        if status == "state":
            nxt = _State(current.theorem_key, current.generation, reply["id"], current.path + (tactic,), reply["pp"])
            return TacticResult("state", self._states.remember(nxt, reply["pp"]))
        if status == "finished":
            return TacticResult("finished")
        if status == "given_up":
            return TacticResult("error", message=SORRY_TACTIC)
        return TacticResult("timeout" if status == "timeout" else "error", message=reply.get("message", ""))

    def check_proof(self, theorem: TheoremSpec, proof: str) -> ProofCheck:
        bad = bad_input(theorem, proof)
        if bad is not None:
            return ProofCheck(False, self.name, error=bad)
        why = forbidden_construct(proof)
        if why is not None:
            return ProofCheck(False, self.name, (forbidden_message(why),))

        def attempt():
            _, dojo_id, _ = self._open(theorem)
            return self._tac(theorem, dojo_id, proof.strip("\n"))

        try:
            reply = retry_once(attempt)
        except (LeanProcessFailure, RuntimeError) as e:
            return ProofCheck(False, self.name, error=str(e))
        return dojo_proof_check(theorem, reply)

    def close(self) -> None:
        self.process.kill()
        self._states.clear()
        if self._own_root:
            shutil.rmtree(self.work_root, ignore_errors=True)


def dojo_proof_check(theorem: TheoremSpec, reply: dict) -> ProofCheck:
    """The worker's answer to a whole proof run as one tactic block, as a `ProofCheck`. The Dojo
    answers the proof only: no statement check, no `#print axioms`, so the verdict rule
    (tasks/lean/verdict.py) can at best call it `unverified`."""
    status = reply["status"]
    if status == "finished":
        notes = Answer(tuple(Message("info", m) for m in [reply.get("message")] if m))
        return proof_check("leandojo", theorem.full_name, notes)
    if status == "given_up":  # Lean accepts a proof through `sorry`, with LeanDojo's warning
        return proof_check("leandojo", theorem.full_name, Answer((Message("warning", "declaration uses 'sorry'"),)))
    if status == "state":
        return ProofCheck(False, "leandojo", (f"unsolved goals\n{reply['pp']}",))
    if status == "timeout":
        return ProofCheck(False, "leandojo", error=reply.get("message", "timed out"))
    return ProofCheck(False, "leandojo", (reply.get("message", ""),))
