"""A temporary Prefect server dies with the process that started it, whatever kills that
process: a SIGKILLed `dojoflow run` left its server running (13 of 13 kills, 230-260 MB each,
alive an hour later); and a second command on the same home waits for the first one's server
start (issue 26). Real servers, real SIGKILL; waits poll with generous limits."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import psutil
import pytest

from flows.runtime.server import is_healthy
from tests.prefect_db import seed_prefect_home

STARTER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from flows.runtime import server as servers
    s = servers.start_temporary(Path(sys.argv[1]))  # holds the home's start lock until it answers
    print(s.pid, s.url, flush=True)
    sys.stdin.readline()  # the test's go: it has seen a second start wait for this one
    servers.wait_until_up(s, Path(sys.argv[1]))
    print("up", flush=True)
    time.sleep(3600)
    """
)


def _wait(predicate, limit: float, every: float = 0.2) -> bool:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(every)
    return predicate()


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


@pytest.mark.timeout(600)
def test_a_second_command_waits_for_the_first_ones_server_start_and_a_sigkilled_run_takes_its_server_with_it(
    tmp_path, migrated_prefect_db
):
    """Two Dojoflow commands on one home at once, then the first one SIGKILLed (one server start
    less than a test for each: the first command's server serves both).

    Two `dojoflow run` on a fresh home at once: both temporary servers migrated one SQLite
    database and the second died in Prefect's migration (issue 26). The start is now locked per
    home. A SIGKILLed `dojoflow run` left its server running; it now dies with the run."""
    import threading

    from flows.runtime import server as servers

    home = seed_prefect_home(tmp_path / "home", migrated_prefect_db)
    starter = subprocess.Popen(  # the first command: a process of its own, as a second `dojoflow run` meets it
        [sys.executable, "-c", STARTER, str(home)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.getcwd()},
    )
    server_pid, said, second = None, [], {}
    waiting = threading.Thread(target=lambda: second.update(server=servers.start_temporary(home, said.append)))
    try:
        server_pid, url = starter.stdout.readline().split()
        server_pid = int(server_pid)
        waiting.start()  # while the first one holds the start lock (until its server answers)
        assert _wait(lambda: said or not waiting.is_alive(), 120), "the second start neither waited nor started"
        assert said and "another Dojoflow command is starting a Prefect server on" in said[0], said
        assert "server" not in second  # nothing of its own launched while the first one starts
        starter.stdin.write("go\n")
        starter.stdin.flush()
        assert starter.stdout.readline().strip() == "up"  # the server answers /api/health: the lock goes
        waiting.join(120)
        servers.wait_until_up(second["server"], home)  # the second one started after the first was up
        assert is_healthy(url) and is_healthy(second["server"].url)

        starter.send_signal(signal.SIGKILL)  # no handler, no cleanup: what the OOM killer does
        starter.wait(60)
        assert _wait(lambda: _gone(server_pid), 120), f"the server (pid {server_pid}) outlived its run"
        assert not is_healthy(url)
        assert is_healthy(second["server"].url)  # the other command's server is not touched
    finally:
        if starter.poll() is None:
            starter.kill()
        if server_pid is not None and not _gone(server_pid):
            os.killpg(server_pid, signal.SIGKILL)  # our own server: never leave it behind
        if waiting.ident is not None:  # started
            waiting.join(120)
        if second.get("server") is not None:
            servers.stop(second["server"])
