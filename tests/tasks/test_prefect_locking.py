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
