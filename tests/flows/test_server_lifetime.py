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
def test_a_sigkilled_run_takes_its_temporary_server_with_it(tmp_path):
    starter = subprocess.Popen(
        [sys.executable, "-c", STARTER, str(tmp_path / "home")],
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
