"""One `dojoflow server start` (a real Prefect server with its UI, on a free port, its home seeded
with `migrated_prefect_db`) per test session (per pytest-xdist worker), shared by the tests that
open the Prefect UI in headless Chromium (test_report_in_ui.py, test_training_logs_in_ui.py);
stopped at the end of the session, after which `dojoflow server status` must say none runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.ports import free_port
from tests.prefect_db import seed_prefect_home

from .browser import chromium_binary
from .test_report_in_ui import dojoflow


@pytest.fixture(scope="session")
def ui_server(tmp_path_factory, migrated_prefect_db) -> tuple[Path, str]:
    """(the Dojoflow home, the server's URL) of the shared `dojoflow server start`."""
    if chromium_binary() is None:
        pytest.skip("chromium is not installed (Debian: apt-get install -y chromium; .ci/run does this)")
    home = seed_prefect_home(tmp_path_factory.mktemp("ui-server") / "home", migrated_prefect_db)
    port = free_port()
    started = dojoflow("server", "start", "--home", str(home), "--port", str(port))
    ui = f"http://127.0.0.1:{port}"
    try:
        assert f"started: {ui}" in started.stdout, started.stdout
        yield home, ui
    finally:
        dojoflow("server", "stop", "--home", str(home), check=False)
    assert dojoflow("server", "status", "--home", str(home), check=False).returncode == 1
