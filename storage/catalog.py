"""The DuckDB catalog: views over the Parquet data, and tables for what the
pipeline records (snapshots, checkpoints, metrics, runs).

Connections are short-lived (open, work, close): DuckDB lets one process write a
database file at a time, and readers must not be locked out for long. Writes go
through `connect(store, write=True)`; every connection holds `catalog.lock`
while it is open.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from . import schemas
from .lock import file_lock

if TYPE_CHECKING:
    from .store import Store

RECORD_TABLES = {
    "checkpoints": """
        CREATE TABLE IF NOT EXISTS checkpoints (
            checkpoint_id VARCHAR PRIMARY KEY, trainer VARCHAR, snapshot_id VARCHAR,
            parent_id VARCHAR, config_hash VARCHAR, path VARCHAR, train_figures JSON,
            created_at TIMESTAMPTZ DEFAULT now())""",
    "metrics": """
        CREATE TABLE IF NOT EXISTS metrics (
            run_id VARCHAR, step INTEGER, step_repo_id VARCHAR, repo_id VARCHAR,
            trainer VARCHAR, split_kind VARCHAR, split VARCHAR, metric VARCHAR,
            value DOUBLE, count BIGINT, checkpoint_id VARCHAR,
            recorded_at TIMESTAMPTZ DEFAULT now(),
            PRIMARY KEY (checkpoint_id, repo_id, split_kind, split, metric))""",
    "runs": """
        CREATE TABLE IF NOT EXISTS runs (
            run_id VARCHAR PRIMARY KEY, flow VARCHAR, config JSON, status VARCHAR,
            started_at TIMESTAMPTZ, finished_at TIMESTAMPTZ, report_path VARCHAR)""",
    "meta": "CREATE TABLE IF NOT EXISTS meta (key VARCHAR PRIMARY KEY, value VARCHAR)",
}


@contextmanager
def connect(store: "Store", write: bool = False, timeout: float = 120.0) -> Iterator:
    import duckdb

    if not write and not store.catalog_path.exists():
        ensure(store)
    # DuckDB refuses to open a file that another process has open for writing, even
    # read-only: readers take the same short lock as writers.
    with file_lock(store.root / "catalog.lock", timeout=timeout):
        if not write:
            con = duckdb.connect(str(store.catalog_path), read_only=True)
            try:
                yield con
            finally:
                con.close()
            return
        con = duckdb.connect(str(store.catalog_path))
        try:
            yield con
        finally:
            con.close()


def ensure(store: "Store") -> None:
    """Create the record tables and the data views if they are missing."""
    with connect(store, write=True) as con:
        for ddl in RECORD_TABLES.values():
            con.execute(ddl)
        _create_views(store, con)


def refresh_views(store: "Store") -> None:
    """Point the data views at the repositories now in the store."""
    with connect(store, write=True) as con:
        _create_views(store, con)


def _create_views(store: "Store", con) -> None:
    repo_ids = store.repo_ids()
    for name, schema in schemas.TABLES.items():
        paths = [str(store.table_path(r, name)) for r in repo_ids]
        if paths:
            listing = ", ".join("'" + p.replace("'", "''") + "'" for p in paths)
            con.execute(f"CREATE OR REPLACE VIEW {name} AS SELECT * FROM read_parquet([{listing}])")
        else:
            empty = schema.empty_table()  # noqa: F841  (read by DuckDB's replacement scan)
            con.execute(f"CREATE OR REPLACE TABLE _empty_{name} AS SELECT * FROM empty")
            con.execute(f"CREATE OR REPLACE VIEW {name} AS SELECT * FROM _empty_{name}")
    # Snapshots are a view over their manifests, so building one needs no catalog write.
    manifests = store.root / "snapshots"
    if any(manifests.glob("*/manifest.json")):
        glob = str(manifests / "*" / "manifest.json").replace("'", "''")
        con.execute(f"""CREATE OR REPLACE VIEW snapshots AS
            SELECT snapshot_id, repo_ids, kept_repo_ids, settings, counts, created_at::TIMESTAMPTZ AS created_at,
                   filename AS manifest_path
            FROM read_json('{glob}', filename = true, union_by_name = true)""")
    else:
        con.execute("""CREATE OR REPLACE VIEW snapshots AS SELECT NULL::VARCHAR AS snapshot_id,
            NULL::VARCHAR[] AS repo_ids, NULL::VARCHAR[] AS kept_repo_ids, NULL::JSON AS settings,
            NULL::JSON AS counts, NULL::TIMESTAMPTZ AS created_at, NULL::VARCHAR AS manifest_path WHERE false""")
    con.execute("INSERT OR REPLACE INTO meta VALUES ('store_root', ?)", [str(store.root)])


def query(store: "Store", sql: str, params=None):
    """Run a read-only query; returns a pyarrow Table."""
    with connect(store) as con:
        return con.sql(sql, params=params).to_arrow_table()
