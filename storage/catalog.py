"""The DuckDB catalog: views over the Parquet data, and tables for what the
pipeline records (checkpoints, metrics, runs; snapshots are a view over manifests).

Connections are short-lived (open, work, close). DuckDB lets one process open the
file for writing, and refuses read-only opens while it does, so `catalog.lock`
is a reader/writer lock: writers (`connect(store, write=True)`) hold it
exclusively, readers share it, so any number of readers run together.
Opening costs ~20 ms of CPU, so reads that run back to back (a report's sections, a
card) share one read-only connection inside `reading(store)`; never around other work,
since a reader keeps another process's writer waiting.

The data views list the folders of the repositories in REPOSITORIES.json. A reader
compares the key they were built for with the store's current one and, if a killed
writer left them stale, builds fresh temporary views for its own connection, so
queries always see exactly the repositories the store lists.

The catalog knows the repositories' tables (storage/schemas.py) and nothing above them: the
views a table module builds over its own data (snapshots, statement sets, forgetting) are a
`Views` that module declares, and the store lists them (`Store.views`); the catalog builds
whatever it is handed, so no module of the store imports another in a circle
(tests/test_layering.py).

Every connection is locked down (`lock_down`): it reads only the store's own data
and snapshot folders, never installs or loads an extension, and a query cannot
change that, because `dojoflow sql` runs whatever a user types (docs/cli.md).
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from . import schemas
from .errors import DamagedStoreError
from .ids import stable_hash
from .lock import file_lock


@dataclass(frozen=True)
class Views:
    """Views a table module declares over its own data; the store lists them (`Store.views`)
    and the catalog builds them after its data views, in that order.

    `create(store, con, kind)` (re)creates them, `kind` being "" or "TEMP " (a reader's own
    views, for its connection only). `key(store)`: what they depend on besides the stored
    repositories (None: nothing now), so a reader builds fresh views when it changes.
    `over_records`: views over record tables, made in the catalog file only, never per reader."""

    create: Callable
    key: Callable | None = None
    over_records: bool = False


class Home(Protocol):
    """What the catalog needs of a store (storage/store.py's `Store`)."""

    root: Path
    views: tuple[Views, ...]

    @property
    def catalog_path(self) -> Path: ...

    @property
    def data_dir(self) -> Path: ...

    def folders(self) -> dict[str, Path]: ...


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
            PRIMARY KEY (run_id, checkpoint_id, repo_id, split_kind, split, metric))""",
    "runs": """
        CREATE TABLE IF NOT EXISTS runs (
            run_id VARCHAR PRIMARY KEY, flow VARCHAR, config JSON, status VARCHAR,
            started_at TIMESTAMPTZ, finished_at TIMESTAMPTZ, report_path VARCHAR, pid INTEGER, host VARCHAR)""",
    "meta": "CREATE TABLE IF NOT EXISTS meta (key VARCHAR PRIMARY KEY, value VARCHAR)",
    # Every proof a search found (storage/proofs.py reads and writes it).
    "proofs": """
        CREATE TABLE IF NOT EXISTS proofs (
            run_id VARCHAR, checkpoint_id VARCHAR, repo_id VARCHAR, theorem_id VARCHAR, proof_id VARCHAR,
            file_path VARCHAR, full_name VARCHAR, split VARCHAR, purpose VARCHAR, tactics JSON, proof VARCHAR,
            checker VARCHAR, axioms JSON, expansions INTEGER, seconds DOUBLE,
            found_at TIMESTAMPTZ DEFAULT now(),
            PRIMARY KEY (run_id, checkpoint_id, theorem_id, proof_id))""",
    # Lean's answer to each proof checked, so a proof is checked once per toolchain
    # (storage/verification_cache.py reads and writes it).
    "verification_cache": """
        CREATE TABLE IF NOT EXISTS verification_cache (
            cache_key VARCHAR PRIMARY KEY, toolchain VARCHAR, header_hash VARCHAR, statement VARCHAR,
            proof VARCHAR, rule_version VARCHAR, backend VARCHAR, verdict VARCHAR, accepted BOOLEAN,
            messages JSON, axioms JSON, answer JSON, checked_at TIMESTAMPTZ DEFAULT now())""",
    # Where a run's numbers came from, beyond its config (storage/ledger.py).
    "run_provenance": """
        CREATE TABLE IF NOT EXISTS run_provenance (
            run_id VARCHAR PRIMARY KEY, dojoflow_version VARCHAR, git_commit VARCHAR, environment JSON,
            verifier_rule_version VARCHAR, cpu_seconds_at_start DOUBLE, cpu_seconds DOUBLE, gpu VARCHAR,
            recorded_at TIMESTAMPTZ DEFAULT now())""",
    # Every theorem a proving evaluation tried or could not try (storage/theorem_results.py).
    "theorem_results": """
        CREATE TABLE IF NOT EXISTS theorem_results (
            run_id VARCHAR, step INTEGER, checkpoint_id VARCHAR, repo_id VARCHAR, theorem_id VARCHAR,
            file_path VARCHAR, full_name VARCHAR, split_kind VARCHAR, split VARCHAR, prover VARCHAR,
            checker VARCHAR, generator VARCHAR, status VARCHAR, reason VARCHAR, n INTEGER, c INTEGER,
            k INTEGER, pass_at_1 DOUBLE, pass_at_k DOUBLE, errors INTEGER, expansions DOUBLE, seconds DOUBLE,
            recorded_at TIMESTAMPTZ DEFAULT now(),
            PRIMARY KEY (run_id, checkpoint_id, theorem_id, split_kind, prover))""",
    # Proofs expert iteration found and the verifier accepted, once per theorem and toolchain:
    # what later rounds train on (storage/found_proofs.py).
    "found_proofs": """
        CREATE TABLE IF NOT EXISTS found_proofs (
            theorem_id VARCHAR, toolchain VARCHAR, repo_id VARCHAR, url VARCHAR, file_path VARCHAR,
            full_name VARCHAR, split VARCHAR, statement_hash VARCHAR, run_id VARCHAR, step INTEGER,
            round INTEGER, checkpoint_id VARCHAR, checker VARCHAR, rule_version VARCHAR, verdict VARCHAR,
            tactics JSON, proof VARCHAR, steps JSON, axioms JSON, expansions INTEGER, carried_from VARCHAR,
            found_at TIMESTAMPTZ DEFAULT now(),
            PRIMARY KEY (theorem_id, toolchain))""",
    # Proofs of statement-set statements a verdict accepted (shipped with a set as claimed, or found by
    # a search), several per statement and toolchain: what whole-proof training reads
    # (storage/statement_sets/proofs.py).
    "statement_proofs": """
        CREATE TABLE IF NOT EXISTS statement_proofs (
            statement_id VARCHAR, toolchain VARCHAR, proof_id VARCHAR, set_name VARCHAR, name VARCHAR,
            proof VARCHAR, checker VARCHAR, verdict VARCHAR, verdict_level VARCHAR, rule_version VARCHAR,
            origin VARCHAR, model VARCHAR, checkpoint_id VARCHAR, run_id VARCHAR, round INTEGER,
            found_at TIMESTAMPTZ DEFAULT now(),
            PRIMARY KEY (statement_id, toolchain, proof_id))""",
    # Whole proofs whole-proof expert iteration kept, several per statement and toolchain (repositories'
    # train theorems and statement sets' statements alike; storage/whole_proofs.py).
    "whole_proofs": """
        CREATE TABLE IF NOT EXISTS whole_proofs (
            key VARCHAR, toolchain VARCHAR, proof_id VARCHAR, kind VARCHAR, repo_id VARCHAR, theorem_id VARCHAR,
            full_name VARCHAR, split VARCHAR, header VARCHAR, statement VARCHAR, informal VARCHAR, proof VARCHAR,
            chars INTEGER, checker VARCHAR, rule_version VARCHAR, verdict VARCHAR, axioms JSON, run_id VARCHAR,
            step INTEGER, round INTEGER, checkpoint_id VARCHAR, found_at TIMESTAMPTZ DEFAULT now(),
            PRIMARY KEY (key, toolchain, proof_id))""",
}


NO_EXTENSIONS = {"autoinstall_known_extensions": False, "autoload_known_extensions": False}


def lock_down(con, readable_dirs) -> None:
    """Let `con` read files only under `readable_dirs` (no other file, no URL, no
    extension), and lock its configuration so no statement can undo that. DuckDB
    refuses to change `allowed_directories` once external access is off, hence the order.
    Open the connection with `config=NO_EXTENSIONS`: those two must be set at connect."""
    con.execute("SET allowed_directories = $dirs", {"dirs": [os.path.join(str(d), "") for d in readable_dirs]})
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")


# Columns added to a record table after its format version shipped: added in place by
# `ensure` and by their writers, since NULL means "not recorded" in older rows.
ADDED_COLUMNS = {
    "runs": {"pid": "INTEGER", "host": "VARCHAR"},
    # The 95% interval of an aggregate over theorems and how it was computed (tasks/stats.py).
    "metrics": {"ci_low": "DOUBLE", "ci_high": "DOUBLE", "interval": "VARCHAR"},
}
# The fingerprint of the benchmark a row is computed on (tasks/proving/benchmarks.py), NULL for a
# repository's split; and the store theorem a benchmark statement was tried through.
ADDED_COLUMNS["metrics"]["benchmark"] = "VARCHAR"
ADDED_COLUMNS["theorem_results"] = {"benchmark": "VARCHAR", "via": "VARCHAR"}
# The compute a theorem's search cost (tasks/ledger.py): its share of the tokens generated, and
# its GPU seconds; NULL where not counted (a generator that is no model, no GPU).
ADDED_COLUMNS["theorem_results"].update({"tokens": "DOUBLE", "gpu_seconds": "DOUBLE"})
# The trainer settings as used (tasks/checkpoints.py, resolved_settings): Dojoflow's resolved
# settings and the trainer library's whole config (TRL's SFTConfig, transformers' TrainingArguments).
ADDED_COLUMNS["checkpoints"] = {"resolved_settings": "JSON"}
# Whether the source tree differed from `git_commit` (uncommitted changes to tracked files).
ADDED_COLUMNS["run_provenance"] = {"git_dirty": "BOOLEAN"}
# What a metric means, as declared where it is computed (tasks/metric_registry.py; storage/metrics.py).
ADDED_COLUMNS["metrics"].update(dict.fromkeys(("direction", "kind", "unit", "question", "baseline_metric"), "VARCHAR"))


def add_columns(con) -> None:
    """Give an older catalog the tables and columns of ADDED_COLUMNS it lacks. One look at the
    catalog's columns first: every record write calls this, and on a current catalog (nearly
    always) it then runs no DDL (the statements cost ~8 ms of CPU per call)."""
    have = set(
        con.execute("SELECT table_name, column_name FROM duckdb_columns() WHERE schema_name = 'main'").fetchall()
    )
    tables = {t for t, _ in have}
    for table, columns in ADDED_COLUMNS.items():
        if table not in tables:
            con.execute(RECORD_TABLES[table])  # a catalog from before the table existed gains it first
        for name, kind in columns.items():
            if (table, name) not in have:
                con.execute(f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS {name} {kind}")


_IN_PROCESS = threading.RLock()
# The read-only connection of a `reading` batch: (catalog path, thread, connection), or None.
_READING: ContextVar[tuple | None] = ContextVar("dojoflow_catalog_reading", default=None)


@contextmanager
def reading(store: Home) -> Iterator[None]:
    """Back-to-back reads in one read-only connection: every `connect(store)` and `query(store, ...)`
    of this thread inside shares it, so the reads pay one open, lock-down and views check, not
    one each (each open costs ~20 ms of CPU). Keep it around reads only, never around other
    work: a reader holds the catalog's shared lock, so another process's writer waits until it
    ends. A write inside one is refused (it would wait on this very reader's lock)."""
    if _batch(store) is not None:
        yield
        return
    with connect(store) as con:
        token = _READING.set((store.catalog_path, threading.get_ident(), con))
        try:
            yield
        finally:
            _READING.reset(token)


def _batch(store: Home):
    """The connection of this thread's `reading` batch over `store`'s catalog, if one is open."""
    active = _READING.get()
    if active is None or active[0] != store.catalog_path or active[1] != threading.get_ident():
        return None
    return active[2]


@contextmanager
def connect(store: Home, write: bool = False, timeout: float = 120.0) -> Iterator:
    """A DuckDB connection to the catalog: read-only and shared, or (`write`) exclusive.
    Inside a `reading` batch, a read-only one is the batch's."""
    import duckdb

    batch = _batch(store)
    if batch is not None:
        if write:
            raise RuntimeError(f"a write to {store.catalog_path} inside a catalog.reading batch, which holds a reader")
        with _damaged_named(store):
            yield batch
        return
    if not write and not store.catalog_path.exists():
        ensure(store)
    # One connection at a time in this process: DuckDB shares one database instance between a
    # process's connections to a file and `lock_down` sets the instance's configuration, so a
    # second thread's connection failed on `SET allowed_directories` while another was open.
    with _IN_PROCESS, file_lock(store.root / "catalog.lock", timeout=timeout, shared=not write):
        try:
            con = duckdb.connect(str(store.catalog_path), read_only=not write, config=NO_EXTENSIONS)
        except duckdb.Error as e:
            raise DamagedStoreError(store.catalog_path, str(e).splitlines()[0], store.root) from e
        try:
            with _damaged_named(store):
                lock_down(con, [store.data_dir, store.root / "snapshots", store.root / "statements"])
                if not write:
                    _fresh_views_for_reader(store, con)
                yield con
        finally:
            con.close()


@contextmanager
def _damaged_named(store: Home) -> Iterator[None]:
    """A DuckDB error that says a store file is damaged, raised as a DamagedStoreError naming it."""
    import duckdb

    try:
        yield
    except duckdb.Error as e:
        damaged = damaged_file(store, e)
        if damaged:
            raise DamagedStoreError(damaged, str(e).splitlines()[0], store.root) from e
        raise


def damaged_file(store: Home, error: Exception) -> str | None:
    """The store file a DuckDB error says is damaged (a Parquet file under data/ that is
    not Parquet, or a corrupt catalog), else None: the error is the query's own."""
    text = str(error)
    if "Corrupt database" in text or "not a valid DuckDB database" in text:
        return str(store.catalog_path)
    data = re.escape(str(store.data_dir))
    found = re.search(rf"['\"]({data}/[^'\"]+\.parquet)['\"]", text)
    if found and any(
        s in text for s in ("magic bytes", "Corrupt", "corrupt", "too small", "truncated", "Invalid Input", "IO Error")
    ):
        return found.group(1)
    return None


def create_views_over_records(store: Home, con) -> None:
    """(Re)create the views over record tables on a writable connection (a record table's
    writer calls it, so a store from before such a view gains it)."""
    for views in store.views:
        if views.over_records:
            views.create(store, con, "")


def ensure(store: Home) -> None:
    """Create the record tables and the data views if they are missing."""
    with connect(store, write=True) as con:
        for ddl in RECORD_TABLES.values():
            con.execute(ddl)
        add_columns(con)
        _create_views(store, con)


def refresh_views(store: Home) -> None:
    """Point the data views at the repositories now in the store."""
    with connect(store, write=True) as con:
        _create_views(store, con)


def views_key(store: Home, folders: dict) -> str:
    """What the views depend on: the listed folders, where the store is, and what each of
    the store's `Views` declares (a part that is None adds nothing)."""
    key = [sorted((r, str(f)) for r, f in folders.items()), str(store.root)]
    parts = (views.key(store) for views in store.views if views.key)
    return stable_hash(key + [part for part in parts if part is not None], 16)


def _fresh_views_for_reader(store: Home, con) -> None:
    folders = store.folders()
    key = views_key(store, folders)
    # a catalog another process has created but not yet `ensure`d has no `meta` table yet
    # (two `dojoflow run` on a fresh home at once: CI at a49ca2d): its views are not fresh.
    # One query, not a look for the table first: every reader's connection makes this check.
    import duckdb

    try:
        found = con.sql("SELECT value FROM meta WHERE key = 'views_key'").fetchall()
    except duckdb.CatalogException:
        found = []
    if found != [(key,)]:
        _create_views(store, con, folders, temp=True)


def _create_views(store: Home, con, folders: dict | None = None, temp: bool = False) -> None:
    """(Re)create the data views; persistent ones record their key in `meta`, in the
    same transaction. `temp` views live only as long as a reader's connection."""
    folders = store.folders() if folders is None else folders
    key = views_key(store, folders)
    kind = "TEMP " if temp else ""
    con.execute("BEGIN TRANSACTION")
    for name, schema in schemas.TABLES.items():
        paths = [str(f / f"{name}.parquet") for f in folders.values()]
        if paths:
            listing = ", ".join("'" + p.replace("'", "''") + "'" for p in paths)
            con.execute(f"CREATE OR REPLACE {kind}VIEW {name} AS SELECT * FROM read_parquet([{listing}])")
        else:
            con.register("empty", schema.empty_table())  # replacement scans count as external access
            con.execute(f"CREATE OR REPLACE {kind}TABLE _empty_{name} AS SELECT * FROM empty")
            con.unregister("empty")
            con.execute(f"CREATE OR REPLACE {kind}VIEW {name} AS SELECT * FROM _empty_{name}")
    for views in store.views:
        if not (temp and views.over_records):
            views.create(store, con, kind)
    if not temp:
        con.execute("INSERT OR REPLACE INTO meta VALUES ('store_root', ?)", [str(store.root)])
        con.execute("INSERT OR REPLACE INTO meta VALUES ('views_key', ?)", [key])
    con.execute("COMMIT")


def has_table(store: Home, table: str) -> bool:
    """Whether the catalog holds the record table `table` (a store from before it has none)."""
    q = "SELECT count(*) AS n FROM duckdb_tables() WHERE table_name = $t"
    return query(store, q, {"t": table}).to_pylist()[0]["n"] > 0


ROWS_PER_INSERT = 200  # rows per statement: DuckDB's executemany runs one statement per row (4-8 ms of CPU each)


def insert_or_replace(con, table: str, columns, values: list[list], key: tuple[int, ...], per: int = 0) -> None:
    """`values` (rows of `columns`) into `table` by INSERT OR REPLACE, `per` (ROWS_PER_INSERT)
    rows per statement. The last row of a key (its values at the positions `key`: the table's
    primary key) wins, as it does row by row: one statement may not write a key twice."""
    rows = list({tuple(row[i] for i in key): row for row in values}.values())
    one, per = f"({', '.join('?' * len(columns))})", per or ROWS_PER_INSERT
    for i in range(0, len(rows), per):
        chunk = rows[i : i + per]
        con.execute(
            f"INSERT OR REPLACE INTO {table} ({', '.join(columns)}) VALUES {', '.join([one] * len(chunk))}",
            [value for row in chunk for value in row],
        )


def insert_new(store: Home, table: str, columns, values: list[list]) -> int:
    """Insert `values` (rows of `columns`) into the record table `table` in one transaction,
    keeping every row whose key is stored already; how many rows were new. A catalog from
    before the table gains it here."""
    with connect(store, write=True) as con:
        con.execute(RECORD_TABLES[table])
        before = con.sql(f"SELECT count(*) FROM {table}").fetchall()[0][0]
        con.execute("BEGIN TRANSACTION")
        con.executemany(
            f"INSERT OR IGNORE INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})", values
        )
        con.execute("COMMIT")
        return con.sql(f"SELECT count(*) FROM {table}").fetchall()[0][0] - before


def rows_of(store: Home, table: str, column: str, values, order_by: str) -> list[dict]:
    """The rows of the record table `table` (none while the catalog lacks it) whose `column` is
    one of `values` (None: every row), ordered by `order_by`."""
    with reading(store):
        if not has_table(store, table):
            return []
        sql = f"SELECT * FROM {table} WHERE $values IS NULL OR list_contains($values, {column}) ORDER BY {order_by}"
        return query(store, sql, {"values": list(values) if values is not None else None}).to_pylist()


def query(store: Home, sql: str, params=None):
    """Run a read-only query; returns a pyarrow Table."""
    with connect(store) as con:
        return con.sql(sql, params=params).to_arrow_table()
