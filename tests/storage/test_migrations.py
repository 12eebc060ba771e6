"""Format migrations: an older store is refused until migrated; data and metrics survive;
a newer store is refused; a migration cut short resumes."""

import json
import os
import re

import duckdb
import pytest

from storage import catalog, schemas
from storage.errors import FormatVersionError, StoreError
from storage.leandojo import import_export
from storage.migrations import MIGRATIONS, migrate
from storage.store import Store
from storage.synthetic import write_synthetic_export

# What version 1 wrote, by hand: its metrics DDL and FORMAT_VERSION.json.
V1_METRICS = """
    CREATE TABLE metrics (
        run_id VARCHAR, step INTEGER, step_repo_id VARCHAR, repo_id VARCHAR,
        trainer VARCHAR, split_kind VARCHAR, split VARCHAR, metric VARCHAR,
        value DOUBLE, count BIGINT, checkpoint_id VARCHAR,
        recorded_at TIMESTAMPTZ DEFAULT now(),
        PRIMARY KEY (checkpoint_id, repo_id, split_kind, split, metric))"""
V1_ROWS = [
    ("run-a", 1, "r1", "r1", "sft", "random", "test", "top1_accuracy", 0.25, 40, "ckpt-1"),
    ("run-a", 1, "r1", "r1", "sft", "random", "val", "top1_accuracy", 0.5, 40, "ckpt-1"),
    ("run-a", 2, "r2", "r2", "sft", "random", "test", "top1_accuracy", 0.75, 40, "ckpt-2"),
]
INSERT = (
    "INSERT INTO metrics (run_id, step, step_repo_id, repo_id, trainer, split_kind, split, metric, value, count,"
    " checkpoint_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def make_v1_store(tmp_path):
    """A store as version 1 left it: data/<repo_id>/ folders and no REPOSITORIES.json,
    the v1 metrics table with rows, FORMAT_VERSION.json saying 1."""
    home = tmp_path / "home"
    store = Store.open(home)
    for i in range(2):
        import_export(store, write_synthetic_export(tmp_path / f"e{i}", f"old{i}", 6 + i, 2, seed=i))
    ids = store.repo_ids()
    for rid, folder in store.folders().items():
        os.replace(folder, store.data_dir / rid)
    store.index_path.unlink()
    con = duckdb.connect(str(store.catalog_path))
    con.execute("DROP TABLE metrics")
    con.execute(V1_METRICS)
    con.executemany(INSERT, [list(r) for r in V1_ROWS])
    con.close()
    (store.root / "FORMAT_VERSION.json").write_text(json.dumps({"format_version": 1, "store_id": "0ldst0re"}))
    return home, ids


def metrics(store):
    return sorted(
        tuple(r.values())
        for r in catalog.query(
            store,
            """
        SELECT run_id, step, step_repo_id, repo_id, trainer, split_kind, split, metric, value, count, checkpoint_id
        FROM metrics""",
        ).to_pylist()
    )


def test_every_version_has_one_step_to_the_next():
    assert sorted(MIGRATIONS) == list(range(1, schemas.FORMAT_VERSION))
    assert all(m.to_version == v + 1 for v, m in MIGRATIONS.items())


def test_an_older_store_is_refused_then_migrated_with_its_data_and_metrics(tmp_path):
    home, ids = make_v1_store(tmp_path)
    root = (home / "store").resolve()
    with pytest.raises(FormatVersionError) as e:
        Store.open(home)
    msg = str(e.value)
    assert str(root) in msg and "format version 1" in msg and f"reads version {schemas.FORMAT_VERSION}" in msg
    assert f"dojoflow migrate --home {home.resolve()}" in msg

    report = migrate(home)
    assert (report.from_version, report.to_version) == (1, schemas.FORMAT_VERSION)
    assert report.steps[0].startswith("1 -> 2: metrics keep every run")
    fmt = json.loads((root / "FORMAT_VERSION.json").read_text())
    assert fmt["format_version"] == schemas.FORMAT_VERSION and fmt["store_id"] == "0ldst0re"
    assert [(m["from"], m["to"]) for m in fmt["migrations"]] == [(1, 2)]

    store = Store.open(home)
    assert store.repo_ids() == ids and store.instance_id == "0ldst0re"
    assert catalog.query(store, "SELECT count(*) AS n FROM theorems")["n"].to_pylist() == [13]  # views rebuilt
    assert metrics(store) == sorted(V1_ROWS)  # every row survived

    # the new key keeps every run's history; one run re-evaluating still replaces its own row
    with catalog.connect(store, write=True) as con:
        con.execute(
            "INSERT OR REPLACE" + INSERT.removeprefix("INSERT"),
            ["run-b", 1, "r1", "r1", "sft", "random", "test", "top1_accuracy", 0.3, 40, "ckpt-1"],
        )
        con.execute(
            "INSERT OR REPLACE" + INSERT.removeprefix("INSERT"),
            ["run-a", 1, "r1", "r1", "sft", "random", "test", "top1_accuracy", 0.35, 40, "ckpt-1"],
        )
    rows = catalog.query(
        store,
        """SELECT run_id, value FROM metrics WHERE checkpoint_id = 'ckpt-1'
                                   AND split = 'test' ORDER BY run_id""",
    ).to_pylist()
    assert rows == [{"run_id": "run-a", "value": 0.35}, {"run_id": "run-b", "value": 0.3}]

    assert migrate(home).steps == ()  # nothing left to do
    assert import_export(store, write_synthetic_export(tmp_path / "e2", "new", 5, 2))[0].status == "added"


def test_a_migration_cut_short_resumes_without_duplicating_rows(tmp_path):
    home, ids = make_v1_store(tmp_path)
    MIGRATIONS[1].apply(Store((home / "store").resolve()))  # the step ran, the version bump did not
    assert json.loads((home / "store" / "FORMAT_VERSION.json").read_text())["format_version"] == 1
    with pytest.raises(FormatVersionError):
        Store.open(home)
    assert migrate(home).to_version == schemas.FORMAT_VERSION
    store = Store.open(home)
    assert store.repo_ids() == ids and metrics(store) == sorted(V1_ROWS)


def test_a_store_from_a_newer_version_is_refused_by_open_and_by_migrate(tmp_path):
    s = Store.open(tmp_path / "h")
    (s.root / "FORMAT_VERSION.json").write_text(json.dumps({"format_version": schemas.FORMAT_VERSION + 1}))
    before = (s.root / "FORMAT_VERSION.json").read_bytes()
    for attempt in (lambda: Store.open(tmp_path / "h"), lambda: migrate(tmp_path / "h")):
        with pytest.raises(FormatVersionError, match=rf"format version {schemas.FORMAT_VERSION + 1}.*upgrade Dojoflow"):
            attempt()
    assert (s.root / "FORMAT_VERSION.json").read_bytes() == before


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ('{"format_version": true}', "format_version is true, not a version number"),
        ('{"format_version": "1"}', 'format_version is "1", not a version number'),
        ('{"format_version": 0}', "format_version is 0, not a version number"),
        ("/dev/zero", "not a regular file"),
        ("fifo", "not a regular file"),
    ],
)
def test_a_format_file_that_is_no_version_is_refused_and_nothing_migrates(tmp_path, content, says):
    """`format_version: true` ran the 1 -> 2 migration (int(True) == 1); a link to /dev/zero
    ended in MemoryError; a FIFO blocked for ever (issue 26)."""
    s = Store.open(tmp_path / "h")
    fmt = s.root / "FORMAT_VERSION.json"
    fmt.unlink()
    if content == "/dev/zero":
        fmt.symlink_to("/dev/zero")
    elif content == "fifo":
        os.mkfifo(fmt)
    else:
        fmt.write_text(content)
    for attempt in (lambda: Store.open(tmp_path / "h"), lambda: migrate(tmp_path / "h")):
        with pytest.raises(StoreError, match=re.escape(says)):
            attempt()
    if fmt.is_file() and not fmt.is_symlink():
        assert fmt.read_text() == content  # no migration recorded


def test_add_columns_gives_an_older_catalog_the_tables_and_columns_it_lacks_and_is_idempotent(tmp_path):
    con = duckdb.connect(str(tmp_path / "old.duckdb"))
    con.execute(V1_METRICS)  # metrics without the columns added since; no theorem_results table
    con.execute(
        "INSERT INTO metrics VALUES " + ", ".join(["(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, now())"] * 3),
        [v for r in V1_ROWS for v in r],
    )
    for _ in range(2):  # the second call finds everything there and changes nothing
        catalog.add_columns(con)
        have = set(con.execute("SELECT table_name, column_name FROM duckdb_columns()").fetchall())
        for table, columns in catalog.ADDED_COLUMNS.items():
            assert {(table, c) for c in columns} <= have, table
        assert con.execute("SELECT count(*), count(ci_low) FROM metrics").fetchone() == (3, 0)
    con.close()
