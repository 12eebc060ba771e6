"""Prefect's environment for Dojoflow, set before Prefect is imported.

Without a Prefect server configured (PREFECT_API_URL), Dojoflow runs on Prefect's
embedded server with its database under `<DOJOFLOW_HOME>/prefect/`, so runs are
kept with the store and `PREFECT_HOME=<home>/prefect prefect server start` shows
them in the UI. Values the user already set are left alone.
"""

from __future__ import annotations

import os
from pathlib import Path


def prepare_prefect_env(home: Path) -> None:
    defaults = {
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "DO_NOT_TRACK": "1",  # Prefect's client telemetry (and other tools honouring the convention)
        "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "180",
        "PREFECT_LOGGING_LEVEL": "INFO",
        "TOKENIZERS_PARALLELISM": "false",
    }
    if not os.environ.get("PREFECT_API_URL"):
        defaults["PREFECT_HOME"] = str(Path(home) / "prefect")
    (Path(home) / "prefect").mkdir(parents=True, exist_ok=True)
    for key, value in defaults.items():
        os.environ.setdefault(key, value)
    os.environ.setdefault("DOJOFLOW_HOME", str(home))
