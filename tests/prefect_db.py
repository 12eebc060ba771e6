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

import fcntl
import sqlite3
import tempfile
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
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


@contextmanager
def one_migration_per_run(harness, shared: Path) -> Iterator[Callable[[Path], None]]:
    """The session servers of a run's pytest-xdist workers migrate one database between them: the
    first worker to start its server (`harness`: prefect.testing.utilities) migrates a fresh one
    while holding a lock in `shared` (the run's temporary folder, common to its workers) and
    publishes a copy taken as it started (the callable yielded, given that copy; it frees the lock);
    the others wait on the lock, then start their servers on a copy of it, which they check and do
    not migrate again (5.5 against 10-11 s of server CPU on the 2-core box). Each worker's server
    still has a database of its own."""
    template = Path(shared) / "prefect-migrated.db"
    with open(Path(shared) / "prefect-migrated.lock", "a") as lock:  # closed (unlocked) at the end
        fcntl.flock(lock, fcntl.LOCK_EX)
        if template.exists():
            fcntl.flock(lock, fcntl.LOCK_UN)
            seeded = Path(tempfile.mkdtemp())
            copy_db(template, seeded / "prefect-test.db")  # where the harness keeps its database

            def seeded_once() -> str:  # the harness's next temporary folder, then mkdtemp's again
                harness.mkdtemp = tempfile.mkdtemp
                return str(seeded)

            harness.mkdtemp = seeded_once
            yield lambda migrated: None
        else:

            def publish(migrated: Path) -> None:
                partial = template.with_suffix(".partial")
                copy_db(migrated, partial)
                partial.replace(template)
                fcntl.flock(lock, fcntl.LOCK_UN)

            yield publish
