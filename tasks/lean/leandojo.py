"""The `leandojo` backend: lean-dojo's `Dojo` on a traced repository, for users who
trace with LeanDojo.

`Dojo` runs in a worker process (tasks/lean/leandojo_worker.py) started under
bubblewrap (tasks/lean/sandbox.py): a folder of its own as HOME and TMPDIR, Dojoflow,
Python and the toolchain read-only, lean-dojo's cache writable (Dojo writes there), no
network, its own PID namespace, a minimal environment (lean-dojo reads tokens from the environment; the
worker never gets them), memory and CPU limits. Each request has a wall-clock limit; a
worker that crashes or hangs is killed and replaced, the theorem is opened again, its
tactics replayed and the request retried once, then reported as an error.
`TacticState` -> "state", `ProofFinished` -> "finished", `LeanError` -> "error",
`ProofGivenUp` (a `sorry`) -> "error".

What lean-dojo 4.20.0's real `Dojo` requires, and how this backend meets it:
- a Dojo whose tactic timed out keeps its stale pexpect stream (the late answer would be read
  as the next tactic's): the worker closes it, and the next request opens the theorem again
  and replays the state's tactics (`_State.opened` names the Dojo a state lives in);
- `DojoCrashError` and a tactic timeout are infrastructure errors, retried once on a fresh Dojo
  (the state's tactics replayed), then reported as an error / "timeout", never a rejection;
- `Lean4Repl` parses one tactic per request: whole proofs are split into their top-level
  tactics (tasks/lean/tactic_split.py) and sent one by one;
- the Dojo's start has its own limit (`leandojo.start_timeout_s`), apart from the tactics';
- the Dojo opens the repository tracing built (tasks/lean/dojo_repo.py), never traces.
Dojo neither checks the statement nor reports axioms, so its finished proofs are `unverified`
(tasks/lean/verdict.py) unless a whole-proof backend re-checks them (`backend.recheck`,
tasks/lean/recheck.py; docs/lean-backends.md).
"""

from __future__ import annotations

import itertools
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

from storage.errors import DojoflowError, InputError

from .availability import ELAN, LEAN_EXTRA, sandbox_limits
from .backend import (
    SORRY_TACTIC,
    ProofCheck,
    ProofState,
    TacticResult,
    TheoremSpec,
    crash_message,
)
from .config import BackendSettings
from .environment import minimal_env, private_env
from .failures import LeanProcessFailure, retry_once
from .sandbox import python_worker_argv, set_limits
from .states import LeanProcessBackend, failure_result, refused_check
from .tactic_split import split_tactics
from .verdict import Answer, Message, bad_theorem, proof_check

DOJOFLOW_ROOT = Path(__file__).resolve().parents[2]


def dojo_cache_dir(settings: BackendSettings) -> Path:
    """lean-dojo's CACHE_DIR for the worker: the option, else $CACHE_DIR, else lean-dojo's default
    (lean_dojo/constants.py:26-30)."""
    cache = settings.leandojo.cache_dir or os.environ.get("CACHE_DIR") or "~/.cache/lean_dojo"
    return Path(cache).expanduser().resolve()


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
        # where tracing left the built repository; no remote cache, no .env file read at import
        extra.update(CACHE_DIR=str(dojo_cache_dir(self.settings)), DISABLE_REMOTE_CACHE="1", PYTHON_DOTENV_DISABLED="1")
        env = private_env(minimal_env(extra=extra), str(cwd))  # HOME: the worker's own folder
        limits = sandbox_limits(self.settings)
        argv = python_worker_argv(  # lean-dojo and the Lean it runs, inside bubblewrap
            limits.bwrap,
            [sys.executable, "-m", "tasks.lean.leandojo_worker"],
            read_only=[str(DOJOFLOW_ROOT), *self.settings.leandojo.extra_pythonpath, *limits.read_only],
            # Dojo writes its modified file next to the traced one, in the cache, and runs Lean
            # there: the cache is writable (bubblewrap 0.8 has no overlay). docs: "Sandbox".
            writable=[str(cwd), *limits.writable] + ([extra["CACHE_DIR"]] if os.path.isdir(extra["CACHE_DIR"]) else []),
            cwd=str(cwd),
            env=env,
            network=False,
        )
        self.log = open(cwd / "worker.log", "w", encoding="utf-8")
        self.proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
            encoding="utf-8",
            bufsize=1,
            start_new_session=True,
            preexec_fn=lambda: set_limits(limits.memory_limit_mb, limits.cpu_limit_s),
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
            return json.loads(line)


@dataclass(frozen=True)
class _State:
    theorem_key: str
    opened: int  # the Dojo this state lives in (a number of `LeanDojoBackend._opened`)
    dojo_id: int
    path: tuple[str, ...]
    goals: str


@dataclass(frozen=True)
class _Opened:
    number: int
    generation: int  # of the worker process
    dojo_id: int  # the initial state's id
    pp: str


class LeanDojoBackend(LeanProcessBackend):
    name = "leandojo"
    work_prefix = "dojoflow-dojo-"

    def __init__(self, settings: BackendSettings):
        super().__init__(settings)
        self.process = _DojoProcess(settings, self.work_root)
        self._opened: dict[str, _Opened] = {}  # theorem key -> its live Dojo
        self._numbers = itertools.count(1)

    @staticmethod
    def _key(theorem: TheoremSpec) -> str:
        return f"{theorem.repo_id}:{theorem.file_path}:{theorem.full_name}"

    def _open(self, theorem: TheoremSpec) -> _Opened:
        """The theorem's live Dojo in the current worker, opened now if there is none."""
        key = self._key(theorem)
        opened = self._opened.get(key)
        if opened is not None and opened.generation == self.process.current_generation():
            return opened
        self._opened.pop(key, None)
        opts = self.settings.leandojo
        reply = self.process.request(
            {
                "op": "start",
                "key": key,
                "cache_dir": str(dojo_cache_dir(self.settings)),
                "start_timeout": opts.start_timeout_s,
                "tactic_timeout": self.settings.tactic_timeout_s,
                "theorem": {
                    "url": theorem.url,
                    "commit": theorem.commit,
                    "file_path": theorem.file_path,
                    "full_name": theorem.full_name,
                },
                "additional_imports": opts.additional_imports,
                "build_deps": opts.build_deps,
            },
            opts.start_timeout_s + 60,  # backstop for a hung worker; the Dojo enforces the limit itself
        )
        if reply["status"] != "state":
            raise RuntimeError(reply.get("message", "Dojo could not start the theorem"))
        self._opened[key] = _Opened(next(self._numbers), self.process.generation, reply["id"], reply["pp"])
        return self._opened[key]

    def _current(self, state: _State, theorem: TheoremSpec) -> _State:
        """`state` in a live Dojo: itself, or rebuilt by replaying its tactics on a new one."""
        opened = self._opened.get(state.theorem_key)
        if opened is not None and opened.number == state.opened and opened.generation == self.process.generation:
            return state
        opened = self._open(theorem)
        dojo_id = opened.dojo_id
        for tactic in state.path:
            reply = self._tac(theorem, dojo_id, tactic)
            if reply["status"] != "state":
                raise RuntimeError(f"replaying `{tactic}` on a new Dojo failed: {reply.get('message', reply)}")
            dojo_id = reply["id"]
        return _State(state.theorem_key, opened.number, dojo_id, state.path, state.goals)

    def _tac(self, theorem: TheoremSpec, dojo_id: int, tactic: str) -> dict:
        """One tactic in the theorem's Dojo. A Dojo that timed out or crashed is gone (the worker
        closed it); both raise LeanProcessFailure, so that `retry_once` tries a new Dojo once."""
        key = self._key(theorem)
        reply = self.process.request(
            {"op": "run_tac", "key": key, "id": dojo_id, "tactic": tactic},
            # Dojo enforces the tactic limit itself; this is the backstop for a hung worker.
            max(2 * self.settings.tactic_timeout_s, self.settings.tactic_timeout_s + 5),
        )
        if reply.get("discarded"):
            self._opened.pop(key, None)
        if reply["status"] in ("crashed", "timeout"):  # a hang is retried like a crash, on a fresh Dojo
            raise LeanProcessFailure(reply["message"], reply["status"] == "timeout")
        return reply

    def start(self, theorem: TheoremSpec) -> TacticResult:
        bad = bad_theorem(theorem)
        if bad is not None:
            return TacticResult("error", message=bad)
        try:
            opened = retry_once(lambda: self._open(theorem))
        except (LeanProcessFailure, RuntimeError) as e:
            return failure_result(e)
        record = _State(self._key(theorem), opened.number, opened.dojo_id, (), opened.pp)
        return TacticResult("state", self._states.remember(record, opened.pp))

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
            nxt = _State(current.theorem_key, current.opened, reply["id"], current.path + (tactic,), reply["pp"])
            return TacticResult("state", self._states.remember(nxt, reply["pp"]))
        if status == "finished":
            return TacticResult("finished")
        if status == "given_up":
            return TacticResult("error", message=SORRY_TACTIC)
        return TacticResult("error", message=reply.get("message", ""))

    def _run_steps(self, theorem: TheoremSpec, tactics: list[str]) -> dict:
        """Run `tactics` one by one from a fresh initial state; the last answer, or the first that
        is not a state. Tactics left after the proof finished are Lean's "no goals" error."""
        dojo_id = self._open(theorem).dojo_id
        reply: dict = {"status": "state", "pp": ""}
        for i, tactic in enumerate(tactics):
            reply = self._tac(theorem, dojo_id, tactic)
            if reply["status"] == "finished" and i < len(tactics) - 1:
                return {"status": "error", "message": f"no goals to be proved (at `{tactics[i + 1]}`)"}
            if reply["status"] != "state":
                return reply
            dojo_id = reply["id"]
        return reply

    def check_steps(self, theorem: TheoremSpec, tactics: tuple[str, ...]) -> ProofCheck:
        """Check a proof given as its tactics (best-first search's found path): each tactic goes to
        the Dojo as it was found, with no re-splitting of the joined text."""
        text = "\n".join(tactics)
        refused = refused_check(self.name, theorem, text)
        if refused is not None:
            return refused
        if not tactics:
            return ProofCheck(False, self.name, ("empty proof",))
        try:
            reply = retry_once(lambda: self._run_steps(theorem, list(tactics)))
        except (LeanProcessFailure, RuntimeError) as e:
            return ProofCheck(False, self.name, error=str(e))
        return dojo_proof_check(theorem, reply)

    def check_proof(self, theorem: TheoremSpec, proof: str) -> ProofCheck:
        """A whole tactic block, sent one top-level tactic at a time (Lean4Repl parses one tactic)."""
        return self.check_steps(theorem, tuple(split_tactics(proof)))

    def close(self) -> None:
        self.process.kill()
        self._states.clear()
        self._opened.clear()
        self._root.remove()


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


def check_leandojo(settings: BackendSettings) -> None:
    """The leandojo backend's `available` (tasks/lean/registry.py): lean-dojo, `lake`, a sandbox."""
    sandbox_limits(settings)  # Dojoflow starts the Dojo's Lean processes: they must be contained
    from .dojo_repo import check_lean_dojo

    try:
        check_lean_dojo(settings.leandojo.extra_pythonpath)
    except DojoflowError as e:
        raise InputError("backend.kind: leandojo", str(e), LEAN_EXTRA) from None
    if shutil.which("lake") is None:
        raise InputError("backend.kind: leandojo", "no `lake` on PATH (lean-dojo runs Lean through lake)", ELAN)


def open_leandojo(settings: BackendSettings, store):
    """The leandojo backend's `opener` (tasks/lean/registry.py)."""
    return LeanDojoBackend(settings)


def dojo_toolchain(settings: BackendSettings, theorem) -> tuple[str, str]:
    """The traced repository in lean-dojo's cache: its lean-toolchain (InputError when tracing did not leave it there)."""
    from .dojo_repo import find_traced_repo

    found = find_traced_repo(dojo_cache_dir(settings), theorem.url, theorem.commit)
    return str(found.traced_dir), found.lean_toolchain
