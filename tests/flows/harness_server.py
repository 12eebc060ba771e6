"""The worker's harness Prefect server (the `prefect` fixture, tests/conftest.py) as the server
`dojoflow server start` keeps for a home, for tests that run Dojoflow commands as real
processes and are not about the temporary server: such a command then pays no server start."""

from __future__ import annotations

import json
from pathlib import Path


def as_if_dojoflow_server_started(home: Path) -> str:
    """`<home>/prefect/server.json` naming this worker's harness server, as `dojoflow server start`
    writes it (flows/runtime/server.py): commands on `home` run against it. Returns its UI address."""
    from prefect.server.api.server import SubprocessASGIServer
    from prefect.settings import PREFECT_API_URL

    harness = SubprocessASGIServer._instances[None]  # the `prefect` fixture's (tests/conftest.py)
    url = PREFECT_API_URL.value()
    server_file = Path(home) / "prefect" / "server.json"
    server_file.parent.mkdir(parents=True, exist_ok=True)
    server_file.write_text(json.dumps({"url": url, "pid": harness.server_process.pid}))
    return url.removesuffix("/api")


def flow_run_state(run_id: str) -> str:
    """The state type of a flow run on the harness server (e.g. "CANCELLED")."""
    import httpx
    from prefect.settings import PREFECT_API_URL

    response = httpx.get(f"{PREFECT_API_URL.value()}/flow_runs/{run_id}", timeout=30).raise_for_status()
    return response.json()["state"]["type"]
