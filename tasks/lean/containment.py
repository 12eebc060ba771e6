"""What the sandbox's launcher adds around bubblewrap: a cap on processes and on total memory
for the whole sandboxed tree, and a cap on the size of each answer Lean writes.

- Processes and memory: a process and its children inside bubblewrap each get RLIMIT_AS, but
  RLIMIT_NPROC does not hold them where the launcher runs as root: the kernel exempts the
  root user outright (kernel/fork.c `copy_process`: `if (p->real_cred->user != INIT_USER &&
  !capable(CAP_SYS_RESOURCE) && !capable(CAP_SYS_ADMIN))`), and a user namespace's uid mapping
  does not change the real uid it maps to (bwrap's `--uid` maps to the caller's own uid). So
  the launcher puts bubblewrap in a cgroup of its own (`pids.max`, and `memory.limit_in_bytes`
  / `memory.max`: the whole tree, not each process); where no cgroup can be made (a user
  without a delegated cgroup), RLIMIT_NPROC is set in the sandbox, where it holds for a
  non-root user. `mechanism` says which applied.
- Answer size: the REPL answers each command with one JSON object ended by a blank line
  (leanprover-community/repl `REPL/Main.lean`: `IO.println (toJson r).pretty` then an empty
  line; LeanInteract reads up to "\\n\\n", lean_interact/server.py `_execute_cmd_in_repl`, into
  memory without a limit). `pump_answers` passes the Lean process's stdout through, one whole
  answer at a time, each at most `limit` bytes; a longer one is not passed on: the process
  tree is stopped and the caller gets `oversized_answer(limit)` instead, an answer
  Dojoflow reads as an infrastructure error with its reason (`ANSWER_CAP_MARK`).
- Reaping: the launcher is its tree's subreaper (`become_subreaper`) and reaps what is left of
  the tree before it exits (`reap_descendants`). A caller that stops the tree signals outer
  bubblewrap first (LeanInteract's `LeanServer.kill` terminates the children that psutil lists,
  outermost first, then the launcher, and waits up to 1 s for all of them, server.py); the inner
  bubblewrap (the PID namespace's init) and the Lean process it reaps are then orphans, and stay
  zombies until an init reaps them, which on some machines takes over a second (measured here:
  1.1-1.9 s), so every stop waited out LeanInteract's full second. Reparented to the launcher,
  they are reaped at once.

This file imports nothing from Dojoflow: the launcher (sandbox.py) runs as `python -I`.
"""

from __future__ import annotations

import json
import os
import signal
import time
import uuid

ANSWER_CAP_MARK = "dojoflow-launcher: "
"""How the launcher's own answer starts (a REPL's top-level `message`, which a proof cannot
write: Lean's messages about a proof are in `messages`)."""

CGROUP_ROOT = "/sys/fs/cgroup"
PREFIX = "dojoflow-"  # a cgroup's name: PREFIX, the launcher's pid, a random suffix


def oversized_answer(limit: int) -> bytes:
    message = f"{ANSWER_CAP_MARK}Lean's answer exceeded {limit} bytes; the Lean process was stopped"
    return json.dumps({"message": message}).encode() + b"\n\n"


def pump_answers(source_fd: int, sink_fd: int, limit: int) -> bool:
    """Copy answers (each ended by a blank line) from `source_fd` to `sink_fd` until EOF; False
    as soon as one answer passes `limit` bytes (nothing of it is copied, `oversized_answer` is)."""
    buffer = b""
    while True:
        chunk = os.read(source_fd, 1 << 16)
        if not chunk:
            if buffer:
                os.write(sink_fd, buffer)
            return True
        buffer += chunk
        while True:
            end = buffer.find(b"\n\n", 0, limit + 2)
            if end < 0:
                break
            _write_all(sink_fd, buffer[: end + 2])
            buffer = buffer[end + 2 :]
        if len(buffer) > limit:
            _write_all(sink_fd, oversized_answer(limit))
            return False


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class Cgroup:
    """A pids (and memory) cgroup for one sandboxed tree: `enter()` runs in the child before
    exec (subprocess's `preexec_fn`), `close()` stops what is left in it and removes it."""

    def __init__(self, max_processes: int | None, memory_bytes: int | None):
        self.dirs: list[str] = []
        self.max_processes = max_processes
        name = f"{PREFIX}{os.getpid()}-{uuid.uuid4().hex[:8]}"
        for parent in (_own_v1("pids"), _own_v1("memory"), _own_v2()):
            sweep(parent)
        unified: dict[str, str] = {}  # what cgroup v1 could not take, for one cgroup v2 folder
        self.processes_capped = False
        if max_processes is not None:
            pids = _make(_own_v1("pids"), name, {"pids.max": str(max_processes)})
            self.dirs += [pids] if pids else []
            self.processes_capped = pids is not None
            unified.update({} if pids else {"pids.max": str(max_processes)})
        if memory_bytes is not None:
            # RAM and, where swap is accounted, RAM + swap (else the kernel swaps instead of stopping it)
            v1 = {"memory.limit_in_bytes": str(memory_bytes), "memory.memsw.limit_in_bytes": str(memory_bytes)}
            memory = _make(_own_v1("memory"), name, v1, optional={"memory.memsw.limit_in_bytes"})
            self.dirs += [memory] if memory else []
            unified.update({} if memory else {"memory.max": str(memory_bytes), "memory.swap.max": "0"})
        if unified:
            both = _make(_own_v2(), name, unified)
            self.dirs += [both] if both else []
            self.processes_capped = self.processes_capped or (both is not None and "pids.max" in unified)

    @property
    def mechanism(self) -> str:
        if self.processes_capped:
            return "pids cgroup"
        if self.max_processes is not None and os.getuid() != 0:
            return "RLIMIT_NPROC"
        return "none"

    def enter(self) -> None:
        """In the child, before exec: join the cgroups; where none holds processes, RLIMIT_NPROC."""
        for d in self.dirs:
            with open(os.path.join(d, "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))
        if self.mechanism == "RLIMIT_NPROC":
            import resource

            resource.setrlimit(resource.RLIMIT_NPROC, (self.max_processes, self.max_processes))

    def close(self) -> None:
        for d in self.dirs:
            _remove(d)


def sweep(parent: str | None) -> None:
    """Remove the cgroups of launchers that are gone (a launcher killed with SIGKILL cannot
    remove its own): `PREFIX<pid>-...` whose pid is no longer alive; what is left in one is killed."""
    if parent is None or not os.path.isdir(parent):
        return
    for entry in os.listdir(parent):
        if not entry.startswith(PREFIX):
            continue
        pid = entry[len(PREFIX) :].split("-", 1)[0]
        if pid.isdigit() and not pid_alive(int(pid)):
            _remove(os.path.join(parent, entry))


def pid_alive(pid: int) -> bool:
    """Whether a process `pid` exists (one of another user's counts: signal 0 is refused, not unknown)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _remove(d: str) -> None:
    for _ in range(50):
        pids = _read_pids(d)
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    try:
        os.rmdir(d)
    except OSError:
        pass


def _read_pids(d: str) -> list[int]:
    try:
        with open(os.path.join(d, "cgroup.procs")) as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def _own_path(controller: str) -> str | None:
    """This process's cgroup path for `controller` (v1), or the unified one (`controller` "")."""
    try:
        with open("/proc/self/cgroup") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if (controller and controller in controllers.split(",")) or (not controller and controllers == ""):
            return path
    return None


def _own_v1(controller: str) -> str | None:
    path = _own_path(controller)
    base = os.path.join(CGROUP_ROOT, controller)
    return None if path is None or not os.path.isdir(base) else base + path.rstrip("/")


def _own_v2() -> str | None:
    path = _own_path("")
    if path is None or not os.path.exists(os.path.join(CGROUP_ROOT, "cgroup.controllers")):
        return None
    return CGROUP_ROOT + path.rstrip("/")


def _make(parent: str | None, name: str, settings: dict[str, str], optional=frozenset()) -> str | None:
    """A new cgroup under `parent` with `settings` written (those in `optional` where the file
    exists), or None where that is not allowed."""
    if parent is None:
        return None
    d = os.path.join(parent, name)
    try:
        os.mkdir(d)
    except OSError:
        return None
    try:
        for key, value in settings.items():
            if key in optional and not os.path.exists(os.path.join(d, key)):
                continue
            with open(os.path.join(d, key), "w") as f:
                f.write(value)
    except OSError:
        try:
            os.rmdir(d)
        except OSError:
            pass
        return None
    return d


PR_SET_CHILD_SUBREAPER = 36  # prctl(2), <linux/prctl.h>


def become_subreaper() -> bool:
    """Make this process the reaper of its orphaned descendants (prctl(2)
    PR_SET_CHILD_SUBREAPER): they are reparented to it, not to init. False where it cannot."""
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def reap_descendants(limit_s: float) -> None:
    """Reap this process's children (a subreaper's: its orphaned descendants too) until none is
    left, or for at most `limit_s` (what is still running then is left to init, as without this)."""
    deadline = time.monotonic() + limit_s
    delay = 0.001
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return  # none left
        if pid:
            continue
        if time.monotonic() >= deadline:
            return
        time.sleep(delay)
        delay = min(2 * delay, 0.02)
