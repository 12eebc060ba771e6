"""Closing a search backend without LeanInteract's full garbage collections.

LeanInteract's `LeanServer.kill` (lean_interact/server.py, 0.11) ends with `gc.collect()`, and
`LeanServer.__del__` calls `kill` again: two full collections of the whole process per REPL
server closed. In a process that holds torch, transformers, TRL and Prefect (the curriculum, the
pytest worker) a full collection walks several hundred thousand objects (about 0.2 s of CPU on
the 2-core test box, 322k objects, more under load), and every proving batch and expert-iteration
search batch closes its backend once.

`close_quickly(backend)` closes it with the objects that existed before frozen (`gc.freeze`):
those collections then look only at what is new, and everything is unfrozen again right after
(once the last of several closes running at once in other threads is done).
Nothing else changes: the Lean processes are still terminated and reaped, their pipes closed;
garbage that a collection would have freed then is freed by the next automatic one.

    python -c "help('tasks.proving.closing')"
"""

from __future__ import annotations

import gc
import threading

_lock = threading.Lock()
_closing = 0  # closes under way (batches close in threads of their own): the last one unfreezes


def close_quickly(closable) -> None:
    """`closable.close()`, with the process's existing objects out of the garbage collector's sight."""
    global _closing
    with _lock:
        if _closing == 0:
            gc.freeze()
        _closing += 1
    try:
        closable.close()
    finally:
        with _lock:
            _closing -= 1
            if _closing == 0:
                gc.unfreeze()
