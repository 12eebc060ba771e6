"""Ending a process as soon as its work and its exit handlers are done, without the interpreter's
module teardown.

At exit CPython also tears every module down and collects garbage several times
(`finalize_modules` in `Py_FinalizeEx`): in a process holding torch, transformers, TRL and PEFT
those collections walk well over a million objects, 1.6-2.4 s of CPU on the 2-core test box
after the work is done (py-spy --native: `gc_collect_main`). The memory goes back to the system
with the process anyway. Used by the `dojoflow` command (flows/cli/quick_exit.py) and by each
training process of a launched step (tasks/trainers/worker.py).
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from typing import NoReturn


def exit_now(code) -> NoReturn:
    """Exit as the interpreter would (`code` as `sys.exit` takes it), without the module teardown:
    what the interpreter's exit does before that teardown, in its order: join the non-daemon
    threads (`threading._shutdown`, which also runs `concurrent.futures`' exit hooks), run every
    `atexit` handler (`logging.shutdown`, Prefect's log and event workers, coverage...), flush
    stdout and stderr, then `os._exit`. (`gc.freeze()` at exit was tried first: the teardown then
    left DuckDB's objects alive and nanobind printed "leaked instance" lines on stderr.)"""
    if code is None:
        code = 0
    elif not isinstance(code, int):  # sys.exit("message"): printed, exit status 1
        print(code, file=sys.stderr)
        code = 1
    shutdown = getattr(threading, "_shutdown", None)  # CPython's own first step of exiting
    if shutdown is not None:
        shutdown()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe or stream: nothing more can reach it
            pass
    os._exit(code & 0xFF)
