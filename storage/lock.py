"""Advisory `flock` locks: one writer at a time, any number of readers.

`file_lock(path)` is exclusive (writers); `file_lock(path, shared=True)` is shared
(readers: they exclude writers but not each other). The operating system releases
a lock when its holder dies, so a killed process never leaves the store locked.
"""

from __future__ import annotations

import fcntl
import os
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .errors import StoreLockedError


def _holder(fd: int, shared: bool) -> str:
    """Who is in the way, for the error message. Only exclusive holders write their pid
    into the file (readers would overwrite each other), so when a shared lock can be
    had the obstacle is readers, and the pid in the file may be a past writer's."""
    if not shared:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            pass
        else:
            fcntl.flock(fd, fcntl.LOCK_UN)
            return "readers are using it"
    return os.pread(fd, 200, 0).decode("utf-8", "replace").strip() or "unknown process"


@contextmanager
def file_lock(path: Path, timeout: float = 0.0, poll: float = 0.05, shared: bool = False) -> Iterator[None]:
    """Hold a lock on `path` (exclusive, or shared if `shared`); wait up to `timeout`
    seconds, then raise StoreLockedError."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    deadline = time.monotonic() + timeout
    try:
        while True:
            try:
                fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise StoreLockedError(path.parent, _holder(fd, shared), reader=shared) from None
                time.sleep(poll)
        if not shared:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"pid {os.getpid()} on {socket.gethostname()}".encode(), 0)
        yield
    finally:
        try:
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)
