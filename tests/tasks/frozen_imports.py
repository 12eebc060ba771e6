"""Imported modules out of the garbage collector's reach for a test module's duration.

Every transformers `Trainer.train()` starts with a full garbage collection (accelerate's
`free_memory`, for GPU memory): in a pytest process (torch, transformers, TRL, Prefect and what
earlier tests left) each costs 0.3-1 s of CPU, more than most of the tiny trainings the tests run.
`imports_frozen` imports what training imports, collects once, and freezes what is alive
(`gc.freeze`), so those collections walk only what the tests create; everything is handed back to
the collector (`gc.unfreeze`) when the module ends, unless the heap was frozen before (the suite's
own freeze, tests/conftest.py): `gc.unfreeze` gives back every frozen object, so that freeze is kept.
Nothing a test computes or asserts changes.
"""

from __future__ import annotations

import contextlib
import gc
import importlib


@contextlib.contextmanager
def imports_frozen(*modules: str):
    """Import `modules`, collect, freeze; unfreeze on leaving (a module-scoped fixture's body)."""
    frozen_before = gc.get_freeze_count() > 0
    for name in modules:
        importlib.import_module(name)
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        if not frozen_before:
            gc.unfreeze()
