"""A migrated Prefect database for tests whose Dojoflow home starts a Prefect server of its own.

A Prefect server on a fresh database first applies every migration: about 15 s of a 20 s start
on a 2-core machine. The session server (`prefect` fixture, tests/conftest.py) migrates one as
it starts; `migrated_prefect_db` is a copy of it taken then, with no run in it, and
`seed_prefect_home` puts such a copy where a home's own server looks (`<home>/prefect/prefect.db`:
a `dojoflow run`'s temporary server, `dojoflow server start`, Prefect's ephemeral server of
`dojoflow prove`; tests/e2e/test_deployment.py copies it to its `prefect server`'s PREFECT_HOME).
The server still starts, checks the migrations and serves from that file. A first run on a
fresh home keeps a fresh home: tests/flows/test_run_terminal.py's first run.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path


def copy_db(source: Path | str, target: Path | str) -> None:
    """A consistent copy of a SQLite database (the backup API: right even while a server writes it)."""
    Path(target).parent.mkdir(parents=True, exist_ok=True)
    with closing(sqlite3.connect(source)) as src, closing(sqlite3.connect(target)) as dst:
        src.backup(dst)


def seed_prefect_home(home: Path, migrated: Path) -> Path:
    """`<home>/prefect/prefect.db` as a copy of `migrated` (the `migrated_prefect_db` fixture); returns home."""
    copy_db(migrated, Path(home) / "prefect" / "prefect.db")
    return Path(home)
