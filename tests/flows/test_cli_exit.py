"""The `dojoflow` process exits without the interpreter's module teardown (flows/cli/quick_exit.py):
after a `dojoflow run` that teardown's garbage collections took 1.6-2.4 s of CPU after the last
line, finished or stopped by Ctrl-C alike. Everything the interpreter's exit does before the
teardown still happens: non-daemon threads are joined, every exit handler runs, output is
flushed, and the exit code is the command's."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import atexit, os, runpy, sys, threading

class Teardown:
    def __del__(self, write=os.write):
        write(1, b"module teardown\\n")

held = Teardown()  # a module global: only the teardown deletes it
main = threading.main_thread()
threading.Thread(target=lambda: (main.join(), print("thread finished"))).start()  # ends after the command
atexit.register(lambda: print("exit handler ran"))  # stdout is a pipe: buffered until flushed
sys.argv = ["dojoflow", *sys.argv[1:]]
runpy.run_module("flows.cli", run_name="__main__", alter_sys=True)
"""


@pytest.mark.parametrize(("args", "code"), [(["--version"], 0), (["sql"], 2)])
def test_the_command_exits_with_its_code_after_threads_and_exit_handlers_without_the_teardown(args, code):
    done = subprocess.run([sys.executable, "-c", PROBE, *args], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == code, done.stderr
    assert "thread finished" in done.stdout and "exit handler ran" in done.stdout, done.stdout
    assert "module teardown" not in done.stdout, done.stdout  # the slow part of the exit was skipped
    if code == 0:
        assert done.stdout.startswith("dojoflow "), done.stdout  # the command's line, then the thread's
    else:
        assert "Missing argument" in done.stderr, done.stderr
