"""`dojoflow repair`: rebuild what a damaged store lets us rebuild, and say what was lost.

The Parquet files and REPOSITORIES.json are the store's truth; the catalog is views
over them plus record tables (checkpoints, metrics, runs, proofs, `catalog.RECORD_TABLES`)
that exist only in the catalog. Repair reads every table of the old catalog it still
can (all but `meta` and the empty stand-ins, which describe the views and are rebuilt),
moves the old catalog aside (never deletes it), drops repositories whose Parquet files
cannot be read (they must be imported again), and builds a fresh catalog. A record
table it could not read is named in `lost`, never dropped silently.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import pyarrow.parquet as pq

from . import atomic, catalog, schemas
from .lock import file_lock
from .store import Store

# The record tables a catalog is expected to hold; `meta` describes the views and is rebuilt.
KEPT_TABLES = tuple(t for t in catalog.RECORD_TABLES if t != "meta")
REBUILT = ("meta",)  # and `_empty_<table>`, the views' empty stand-ins


@dataclass
class RepairReport:
    store_root: Path
    kept: dict[str, int] = field(default_factory=dict)  # table -> rows carried into the new catalog
    lost: dict[str, str] = field(default_factory=dict)  # table -> why it could not be read
    removed: dict[str, str] = field(default_factory=dict)  # repo_id -> which file was damaged, and how
    old_catalog: Path | None = None  # where the previous catalog was moved


def damaged_repositories(store: Store) -> dict[str, str]:
    """{repo_id: problem} for listed repositories with a Parquet file that cannot be read."""
    out = {}
    for repo_id, folder in store.folders().items():
        for name in ("repositories", *schemas.TABLES):
            path = folder / f"{name}.parquet"
            try:
                pq.read_table(path)
            except (OSError, ValueError) as e:  # ArrowInvalid is a ValueError, a missing file an OSError
                out[repo_id] = f"{path}: {str(e).splitlines()[0]}"
                break
    return out


def _read_records(store: Store, report: RepairReport) -> dict:
    import duckdb

    saved = {}
    if not store.catalog_path.exists():
        report.lost.update({t: "the catalog file was missing" for t in KEPT_TABLES})
        return saved
    try:
        con = duckdb.connect(str(store.catalog_path), read_only=True, config=catalog.NO_EXTENSIONS)
    except duckdb.Error as e:
        report.lost.update({t: f"the catalog cannot be opened ({str(e).splitlines()[0]})" for t in KEPT_TABLES})
        return saved
    try:
        catalog.lock_down(con, [])
        try:
            found = [r[0] for r in con.sql("SELECT table_name FROM duckdb_tables() WHERE NOT temporary").fetchall()]
            tables = [t for t in found if t not in REBUILT and not t.startswith("_empty_")]
        except duckdb.Error:
            tables = list(KEPT_TABLES)  # try each one the catalog should hold
        for table in sorted(tables):
            try:
                saved[table] = con.sql(f'SELECT * FROM "{table}"').to_arrow_table()
            except duckdb.Error as e:
                report.lost[table] = str(e).splitlines()[0]
    finally:
        con.close()
    return saved


def repair(home) -> RepairReport:
    """Rebuild the catalog of the store at `home` (see the module docstring)."""
    store = Store.open(home, create=False)
    report = RepairReport(store.root)
    with store.writer(timeout=60), file_lock(store.root / "catalog.lock", timeout=120):
        saved = _read_records(store, report)
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
        label = "damaged" if report.lost else "before-repair"  # a catalog read whole is not called damaged
        for suffix in ("", ".wal"):
            old = Path(str(store.catalog_path) + suffix)
            if old.exists():
                aside = old.with_name(f"{old.name}.{label}-{stamp}")
                os.replace(old, aside)
                report.old_catalog = report.old_catalog or aside
        report.removed = damaged_repositories(store)
        if report.removed:
            index = store._read_index()
            listed = {r: f for r, f in index["repositories"].items() if r not in report.removed}
            store._write_index({"generation": int(index.get("generation", 0)) + 1, "repositories": listed})
            for repo_id in report.removed:
                atomic.remove_tree(store.root / index["repositories"][repo_id])
    catalog.ensure(store)
    with catalog.connect(store, write=True) as con:
        for table, rows in saved.items():
            con.register("saved", rows)
            # a table this version does not define (a newer Dojoflow's) is kept as it was read
            con.execute(f'CREATE TABLE IF NOT EXISTS "{table}" AS SELECT * FROM saved WHERE false')
            con.execute(f'INSERT OR REPLACE INTO "{table}" BY NAME SELECT * FROM saved')
            con.unregister("saved")
            report.kept[table] = rows.num_rows
    return report
