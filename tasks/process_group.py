"""Stopping a child started in a session of its own (`start_new_session=True`) together with
what it started: the tracing steps (tasks/tracing/steps.py: lean-dojo, Ray, lake, lean) and a
launched training step (tasks/trainers/supervise.py: torchrun and its workers).

    python -c "from tasks.process_group import stop_group; help(stop_group)"
"""

from __future__ import annotations

import os
import signal
import subprocess


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
