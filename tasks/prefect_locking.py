"""A Prefect lock manager on `flock`: the operating system releases a lock when its
holder dies.

Prefect's FileSystemLockManager writes lock files that never expire, so a run killed
with SIGKILL while holding a step's lock (SERIALIZABLE isolation) would leave that
step locked for every later run. With `flock`, a later run gets the lock as soon as
the killed process is gone, and resumes the step.
"""

from __future__ import annotations

import asyncio
import fcntl
import logging
import os
import threading
import time
from pathlib import Path

log = logging.getLogger(__name__)

_on_wait = None  # set by the terminal display (flows/ui.py): called once when a lock is busy


def on_wait(callback) -> None:
    """`callback(key)` is called once per acquisition that has to wait for another holder."""
    global _on_wait
    _on_wait = callback


class FlockLockManager:
    """Implements prefect.locking.protocol.LockManager."""

    def __init__(self, lock_files_directory: Path, poll: float = 0.2):
        self.lock_files_directory = Path(lock_files_directory).expanduser().resolve()
        self.poll = poll
        self._held: dict[str, tuple[int, str]] = {}
        self._mutex = threading.Lock()

    def __deepcopy__(self, memo):  # cache policies are deep-copied; held locks belong to this one
        return self

    def __reduce__(self):
        # Sent to another process (a Dask or Ray worker runs the task): a fresh manager there,
        # over the same lock files. Held locks are open file descriptors and stay with their process.
        return (type(self), (self.lock_files_directory, self.poll))

    def _path(self, key: str) -> Path:
        self.lock_files_directory.mkdir(parents=True, exist_ok=True)
        return self.lock_files_directory / f"{key}.lock"

    def _try(self, key: str) -> int | None:
        fd = os.open(self._path(key), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            os.close(fd)
            return None

    def acquire_lock(
        self, key: str, holder: str, acquire_timeout: float | None = None, hold_timeout: float | None = None
    ) -> bool:
        with self._mutex:
            if key in self._held and self._held[key][1] == holder:
                return True
        deadline = None if acquire_timeout is None else time.monotonic() + acquire_timeout
        waited = False
        while True:
            fd = self._try(key)
            if fd is not None:
                with self._mutex:
                    self._held[key] = (fd, holder)
                return True
            if deadline is not None and time.monotonic() >= deadline:
                return False
            if not waited:  # say so once: another run (or process) is computing this very step
                waited = True
                log.info("waiting for another run that holds the lock of this step (%s)", key)
                if _on_wait is not None:
                    _on_wait(key)
            time.sleep(self.poll)

    async def aacquire_lock(
        self, key: str, holder: str, acquire_timeout: float | None = None, hold_timeout: float | None = None
    ) -> bool:
        return await asyncio.to_thread(self.acquire_lock, key, holder, acquire_timeout, hold_timeout)

    def release_lock(self, key: str, holder: str) -> None:
        with self._mutex:
            held = self._held.get(key)
            if held is None or held[1] != holder:
                raise ValueError(f"no lock for transaction with key {key} is held by {holder}")
            del self._held[key]
        fcntl.flock(held[0], fcntl.LOCK_UN)
        os.close(held[0])

    def is_locked(self, key: str) -> bool:
        with self._mutex:
            if key in self._held:
                return True
        fd = self._try(key)
        if fd is None:
            return True
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
        return False

    def is_lock_holder(self, key: str, holder: str) -> bool:
        with self._mutex:
            return key in self._held and self._held[key][1] == holder

    def wait_for_lock(self, key: str, timeout: float | None = None) -> bool:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.is_locked(key):
            if deadline is not None and time.monotonic() >= deadline:
                return False
            time.sleep(self.poll)
        return True

    async def await_for_lock(self, key: str, timeout: float | None = None) -> bool:
        return await asyncio.to_thread(self.wait_for_lock, key, timeout)
