"""A stored repository's row, read from the `repository.json` beside its Parquet files.

The store writes that file with every repository folder (storage/store.py `_stage`); the
store, the snapshots and the LeanDojo export read it back here."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path


def read_repository(folder: Path) -> dict:
    """The `repositories` row of the repository in `folder`, its times as datetimes."""
    # The same row as JSON beside the Parquet file: read ~50x faster, and read often.
    row = json.loads((folder / "repository.json").read_text())
    for key in ("commit_time", "ingested_at"):
        if row[key] is not None:
            row[key] = datetime.fromisoformat(row[key])
    return row
