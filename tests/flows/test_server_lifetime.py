"""A temporary Prefect server dies with the process that started it, whatever kills that
process: a SIGKILLed `dojoflow run` left its server running (13 of 13 kills, 230-260 MB each,
alive an hour later). Real server, real SIGKILL; waits poll with generous limits."""

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
    s = servers.start_temporary(Path(sys.argv[1]))
    print(s.pid, s.url, flush=True)
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
def test_a_sigkilled_run_takes_its_temporary_server_with_it(tmp_path, migrated_prefect_db):
    home = seed_prefect_home(tmp_path / "home", migrated_prefect_db)
    starter = subprocess.Popen(
        [sys.executable, "-c", STARTER, str(home)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.getcwd()},
    )
    server_pid = None
    try:
        server_pid, url = starter.stdout.readline().split()
        server_pid = int(server_pid)
        assert starter.stdout.readline().strip() == "up"  # the server answers /api/health
        assert is_healthy(url)
        starter.send_signal(signal.SIGKILL)  # no handler, no cleanup: what the OOM killer does
        starter.wait(60)
        assert _wait(lambda: _gone(server_pid), 120), f"the server (pid {server_pid}) outlived its run"
        assert not is_healthy(url)
    finally:
        if starter.poll() is None:
            starter.kill()
        if server_pid is not None and not _gone(server_pid):
            os.killpg(server_pid, signal.SIGKILL)  # our own server: never leave it behind


@pytest.mark.timeout(600)
def test_a_second_command_waits_for_the_first_ones_server_start_on_a_home_and_says_so(tmp_path, migrated_prefect_db):
    """Two `dojoflow run` on a fresh home at once: both temporary servers migrated one SQLite
    database and the second died in Prefect's migration (issue 26). The start is now locked per home."""
    import threading

    from flows.runtime import server as servers

    home = seed_prefect_home(tmp_path / "home", migrated_prefect_db)
    first = servers.start_temporary(home)  # holds the home's start lock until it answers
    said, second = [], {}
    waiting = threading.Thread(target=lambda: second.update(server=servers.start_temporary(home, said.append)))
    waiting.start()
    try:
        assert _wait(lambda: said or not waiting.is_alive(), 120), "the second start neither waited nor started"
        assert said and "another Dojoflow command is starting a Prefect server on" in said[0], said
        assert "server" not in second  # nothing of its own launched while the first one starts
        servers.wait_until_up(first, home)  # up: the lock goes, the second one starts
        waiting.join(120)
        servers.wait_until_up(second["server"], home)
        assert is_healthy(first.url) and is_healthy(second["server"].url)
    finally:
        waiting.join(120)
        for s in (first, second.get("server")):
            if s is not None:
                servers.stop(s)
