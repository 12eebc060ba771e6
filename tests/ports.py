"""Ports for the servers the tests start, each pytest-xdist worker in a range of its own.

A server a test starts gets its port from `free_port()`: a free port picked at random from
this worker's range, below Linux's ephemeral range (32768 and up, /proc/sys/net/ipv4/
ip_local_port_range), so neither another worker's server nor an outgoing connection (whose
local port the kernel takes from the ephemeral range) can take it between the check and the
server's bind. Without it two workers could both pick the same port, and one server's health
check could be answered by the other worker's server (Prefect's temporary server, the
kimina server, `prefect server` in tests/e2e). Worker gw<i> (PYTEST_XDIST_WORKER) owns
ports BASE + i*SPAN to BASE + (i+1)*SPAN - 1; a run without xdist is worker 0.
"""

from __future__ import annotations

import os
import random
import socket

BASE, SPAN, WORKERS = 20000, 1000, 12  # 20000-31999: below the ephemeral range


def worker_index() -> int:
    name = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    return int(name[2:]) % WORKERS if name.startswith("gw") and name[2:].isdigit() else 0


def worker_ports() -> range:
    start = BASE + SPAN * worker_index()
    return range(start, start + SPAN)


def is_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port() -> int:
    """A port of this worker's range that nothing listens on now."""
    ports = list(worker_ports())
    random.shuffle(ports)  # other test sessions on the same machine pick at random too
    for port in ports:
        if is_free(port):
            return port
    raise RuntimeError(f"no free port in {worker_ports()}")
