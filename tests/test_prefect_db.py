"""tests/prefect_db.py: the workers' session servers migrate one Prefect database between them."""

from __future__ import annotations

import sqlite3
import tempfile
import threading
import types
from contextlib import closing

from tests.prefect_db import one_migration_per_run


def a_database(path, rows):
    with closing(sqlite3.connect(path)) as db:
        db.execute("CREATE TABLE alembic_version (version_num TEXT)")
        db.executemany("INSERT INTO alembic_version VALUES (?)", [(r,) for r in rows])
        db.commit()


def rows_of(path):
    with closing(sqlite3.connect(path)) as db:
        return [r for (r,) in db.execute("SELECT version_num FROM alembic_version")]


def test_the_first_worker_migrates_and_the_others_start_on_a_copy_of_its_database(tmp_path):
    """The second worker waits while the first one's server starts, then its harness's one next
    temporary folder holds a copy of the published database (and later ones are fresh again)."""
    first, second = types.SimpleNamespace(mkdtemp=tempfile.mkdtemp), types.SimpleNamespace(mkdtemp=tempfile.mkdtemp)
    migrated = tmp_path / "migrated.db"
    a_database(migrated, ["head"])
    seen, waiting = {}, threading.Event()

    def second_worker():
        waiting.set()
        with one_migration_per_run(second, tmp_path) as publish:
            seen["folder"] = second.mkdtemp()
            seen["next"] = second.mkdtemp()
            publish(tmp_path / "unused.db")  # nothing to publish: a no-op

    with one_migration_per_run(first, tmp_path) as publish:
        assert first.mkdtemp is tempfile.mkdtemp  # the first worker's server migrates a fresh database
        thread = threading.Thread(target=second_worker)
        thread.start()
        waiting.wait(timeout=60)
        thread.join(timeout=0.5)
        assert thread.is_alive() and not seen  # held until the first one publishes
        publish(migrated)
        thread.join(timeout=60)
    assert rows_of(f"{seen['folder']}/prefect-test.db") == ["head"]
    assert seen["next"] != seen["folder"] and second.mkdtemp is tempfile.mkdtemp
    assert not (tmp_path / "unused.db").exists() and rows_of(tmp_path / "prefect-migrated.db") == ["head"]


def test_a_first_worker_whose_server_fails_to_start_frees_the_lock_and_publishes_nothing(tmp_path):
    harness = types.SimpleNamespace(mkdtemp=tempfile.mkdtemp)
    try:
        with one_migration_per_run(harness, tmp_path):
            raise RuntimeError("the server did not start")
    except RuntimeError:
        pass
    with one_migration_per_run(harness, tmp_path) as publish:  # not blocked: this one migrates in turn
        assert harness.mkdtemp is tempfile.mkdtemp
        a_database(tmp_path / "m.db", ["head"])
        publish(tmp_path / "m.db")
    assert rows_of(tmp_path / "prefect-migrated.db") == ["head"]
