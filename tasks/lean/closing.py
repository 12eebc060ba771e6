"""Closing a search backend without LeanInteract's full garbage collections.

LeanInteract's `LeanServer.kill` (lean_interact/server.py, 0.11) ends with `gc.collect()`, and
`LeanServer.__del__` calls `kill` again: two full collections of the whole process per REPL
server closed. In a process that holds torch, transformers, TRL and Prefect (the curriculum, the
pytest worker) a full collection walks several hundred thousand objects (about 0.2 s of CPU on
the 2-core test box, 322k objects, more under load), and every proving batch and expert-iteration
search batch closes its backend once.

`heap_frozen()` runs a block with the objects that existed before frozen (`gc.freeze`): those
collections then look only at what is new, and everything is unfrozen again right after (once the
last of several blocks running at once in other threads is done). A heap that was already frozen
when the block started (a caller's `gc.freeze`, as the test suite's: tests/conftest.py) is left as it
was: `gc.unfreeze` cannot give back only part of the frozen objects, so the block neither freezes
nor unfreezes then, and the caller's frozen objects stay frozen. The repl backend closes and
kills its servers inside it (tasks/lean/repl.py, repl_project.py), so every caller gains;
`close_quickly(backend)` does the same for any backend's close (proving, expert iteration, GRPO,
`dojoflow statements verify`).
Nothing else changes: the Lean processes are still terminated and reaped, their pipes closed;
garbage that a collection would have freed then is freed by the next automatic one.

Not around each request: `gc.get_freeze_count()` walks every frozen object (CPython's
gc_list_size), about 9 ms per million, so under a caller's freeze a block per request cost more
than the kills it would have sped up (the traced-proof sweep of tests/tasks/test_lean_repl.py went
from 8 s to 95 s in a full run).

    python -c "help('tasks.lean.closing')"
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_closing = 0  # closes under way (batches close in threads of their own): the last one unfreezes
_froze = False  # whether the first of them froze the heap (it was not frozen before)


@contextmanager
def heap_frozen() -> Iterator[None]:
    """The process's existing objects out of the garbage collector's sight while the block runs
    (a LeanInteract `kill` inside it collects only what is new)."""
    global _closing, _froze
    with _lock:
        if _closing == 0:
            _froze = gc.get_freeze_count() == 0
            if _froze:
                gc.freeze()
        _closing += 1
    try:
        yield
    finally:
        with _lock:
            _closing -= 1
            if _closing == 0 and _froze:
                gc.unfreeze()


def close_quickly(closable) -> None:
    """`closable.close()`, with the process's existing objects out of the garbage collector's sight."""
    with heap_frozen():
        closable.close()
