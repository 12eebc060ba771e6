"""The flock lock manager: exclusive across processes, and free once a holder is killed."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tasks.prefect_locking import FlockLockManager

ROOT = Path(__file__).resolve().parents[2]
HOLD = """
import sys, time
from tasks.prefect_locking import FlockLockManager
m = FlockLockManager(sys.argv[1])
assert m.acquire_lock("step-key", holder="child")
print("held", flush=True)
time.sleep(60)
"""


def test_a_lock_held_by_a_killed_process_is_free_at_once(tmp_path):
    child = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(tmp_path)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert child.stdout.readline().strip() == "held"
        m = FlockLockManager(tmp_path)
        assert m.is_locked("step-key")
        assert not m.acquire_lock("step-key", holder="me", acquire_timeout=0.5)
        child.send_signal(signal.SIGKILL)
        child.wait(10)
        # a lock *file* is still there, as Prefect's FileSystemLockManager would leave it
        assert (tmp_path / "step-key.lock").exists()
        started = time.monotonic()
        assert m.acquire_lock("step-key", holder="me", acquire_timeout=5)
        assert time.monotonic() - started < 1
        assert m.is_lock_holder("step-key", "me") and not m.is_lock_holder("step-key", "other")
        m.release_lock("step-key", "me")
        assert not m.is_locked("step-key")
    finally:
        if child.poll() is None:
            child.kill()


def test_holders_in_one_process_exclude_each_other_until_release(tmp_path):
    m = FlockLockManager(tmp_path)
    assert m.acquire_lock("k", holder="a")
    assert m.acquire_lock("k", holder="a")  # re-entrant for the same holder
    assert not m.acquire_lock("k", holder="b", acquire_timeout=0.3)
    assert not m.wait_for_lock("k", timeout=0.3)
    m.release_lock("k", "a")
    assert m.wait_for_lock("k", timeout=1)
    assert m.acquire_lock("k", holder="b", acquire_timeout=1)


def test_waiting_for_a_busy_lock_is_said_once_and_the_display_shows_why(tmp_path):
    """A second run waiting for the first's step lock shows why it is not moving, not a phase
    that looks like training."""
    import io

    from rich.console import Console

    from flows import ui
    from flows.cli.terminal import RunDisplay

    out = io.StringIO()
    display = RunDisplay(Console(file=out, width=200))
    ui.set_display(display)
    try:
        display.show("train", 1, 3, "sft", "NatBasics")
        holder, waiter = FlockLockManager(tmp_path), FlockLockManager(tmp_path)
        assert holder.acquire_lock("k", holder="first run")
        assert not waiter.acquire_lock("k", holder="second run", acquire_timeout=0.6)
    finally:
        ui.set_display(None)
        display.close()
    lines = out.getvalue().splitlines()
    waiting = [line for line in lines if "waiting for another run" in line]
    assert len(waiting) == 1 and "step 1/3 NatBasics · sft · train · waiting for another run" in waiting[0], lines
