"""Children that do not outlive their parent, and stopping them with what they started.

- `dying_with_this_process`: a command that gets a signal when this process dies, whatever
  kills it (SIGKILL, the OOM killer): a launched training step (tasks/trainers/supervise.py,
  SIGKILL) and the temporary Prefect server (flows/runtime/server.py, SIGTERM).
- `stop_group`: a child started in a session of its own (`start_new_session=True`) stopped
  together with what it started: the tracing steps (tasks/tracing/steps.py: lean-dojo, Ray,
  lake, lean) and a launched training step (torchrun and its workers).

    python -c "from tasks.process_group import stop_group; help(stop_group)"
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

# Run as `python -c DIE_WITH_PARENT PARENT_PID SIGNAL PROGRAM ARGS...`: request SIGNAL on the
# parent's death (PR_SET_PDEATHSIG = 1, prctl(2); kept across execve), exit if the parent is
# already gone (the race prctl(2) describes), then become PROGRAM (found on PATH when it is a
# bare name). A launcher rather than Popen's preexec_fn, which is unsafe once the process has
# threads (Prefect's are). Linux only; elsewhere it only execs, and the caller's own signal
# handlers stop the child.
DIE_WITH_PARENT = """
import ctypes, os, shutil, sys
if sys.platform.startswith("linux"):
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(1, int(sys.argv[2]), 0, 0, 0) != 0:
        sys.exit("prctl(PR_SET_PDEATHSIG) failed: errno %d" % ctypes.get_errno())
    if os.getppid() != int(sys.argv[1]):
        sys.exit(0)
program = shutil.which(sys.argv[3]) or sys.argv[3]
os.execv(program, sys.argv[3:])
"""


def dying_with_this_process(cmd: list[str], sig: signal.Signals) -> list[str]:
    """`cmd` wrapped so that the program gets `sig` when this process dies."""
    return [sys.executable, "-c", DIE_WITH_PARENT, str(os.getpid()), str(int(sig)), *cmd]


def stop_group(proc: subprocess.Popen, grace_s: float) -> None:
    """SIGTERM to the child's process group, SIGKILL after `grace_s` seconds if it is still
    there; returns once it has exited, or when the group is gone or cannot be signalled."""
    for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, grace_s)):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue
