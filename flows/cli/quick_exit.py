"""A `dojoflow` process ends as soon as its command and the exit handlers are done.

At exit CPython also tears every module down and collects garbage several times
(`finalize_modules` in `Py_FinalizeEx`): in a process holding torch, transformers, TRL, PEFT
and Prefect those collections walk well over a million objects, 1.6-2.4 s of CPU after the
command's last line on the 2-core test box (py-spy --native: `gc_collect_main`), for a
`dojoflow run` that finished and for one stopped by Ctrl-C alike. The memory goes back to the
system with the process anyway.

`run_and_exit(app)` runs the command, then does what the interpreter's exit does before that
teardown, in its order: joins the non-daemon threads (`threading._shutdown`, which also runs
`concurrent.futures`' exit hooks), runs every `atexit` handler (Prefect's log and event
workers, `logging.shutdown`, coverage...), flushes stdout and stderr, and ends the process with
the command's exit code (`os._exit`). (`gc.freeze()` at exit was tried first: the teardown
then left DuckDB's objects alive and nanobind printed "leaked instance" lines on stderr.)
An exception other than SystemExit takes the ordinary way out, traceback and all.
`exit_now` lives in tasks/quick_exit.py: a launched step's training processes exit the same way.
"""

from __future__ import annotations

from typing import NoReturn

from tasks.quick_exit import exit_now  # shared with the training workers (tasks/trainers/worker.py)


def run_and_exit(app) -> NoReturn:
    """`app()` (a typer app: it ends in SystemExit), then `exit_now` with its exit code."""
    try:
        app()
        code = 0
    except SystemExit as e:
        code = e.code
    exit_now(code)
