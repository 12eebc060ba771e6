"""Test session settings: offline, quiet Prefect, and one embedded Prefect server.

Flow tests use the `prefect` fixture: one `prefect_test_harness` (a real temporary
Prefect server and database) for the whole session, started on first use.
"""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")

import pytest  # noqa: E402

# The real kimina server (session fixtures `kimina`, `kimina_legacy`): one each per test session.
from tests.doubles.kimina_server import kimina, kimina_legacy  # noqa: E402, F401


@pytest.fixture(scope="session")
def prefect():
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=180):
        yield
