"""The DuckDB catalog: views over the Parquet data, and tables for what the
pipeline records (checkpoints, metrics, runs; snapshots are a view over manifests).

Connections are short-lived (open, work, close). DuckDB lets one process open the
file for writing, and refuses read-only opens while it does, so `catalog.lock`
is a reader/writer lock: writers (`connect(store, write=True)`) hold it
exclusively, readers share it, so any number of readers run together.

The data views list the folders of the repositories in REPOSITORIES.json. A reader
compares the key they were built for with the store's current one and, if a killed
writer left them stale, builds fresh temporary views for its own connection, so
queries always see exactly the repositories the store lists.

Every connection is locked down (`lock_down`): it reads only the store's own data
and snapshot folders, never installs or loads an extension, and a query cannot
change that, because `dojoflow sql` runs whatever a user types (docs/cli.md).
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from . import schemas
from .errors import DamagedStoreError
from .ids import stable_hash
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
    for table, columns in ADDED_COLUMNS.items():
        con.execute(RECORD_TABLES[table])  # a catalog from before the table existed gains it first
        for name, kind in columns.items():
            con.execute(f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS {name} {kind}")


_IN_PROCESS = threading.RLock()


@contextmanager
def connect(store: "Store", write: bool = False, timeout: float = 120.0) -> Iterator:
    """A DuckDB connection to the catalog: read-only and shared, or (`write`) exclusive."""
    import duckdb

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
            lock_down(con, [store.data_dir, store.root / "snapshots", store.root / "statements"])
            if not write:
                _fresh_views_for_reader(store, con)
            yield con
        except duckdb.Error as e:
            damaged = damaged_file(store, e)
            if damaged:
                raise DamagedStoreError(damaged, str(e).splitlines()[0], store.root) from e
            raise
        finally:
            con.close()


def damaged_file(store: "Store", error: Exception) -> str | None:
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


def ensure(store: "Store") -> None:
    """Create the record tables and the data views if they are missing."""
    with connect(store, write=True) as con:
        for ddl in RECORD_TABLES.values():
            con.execute(ddl)
        add_columns(con)
        _create_views(store, con)


def refresh_views(store: "Store") -> None:
    """Point the data views at the repositories now in the store."""
    with connect(store, write=True) as con:
        _create_views(store, con)


def views_key(store: "Store", folders: dict) -> str:
    """What the views depend on: the listed folders, where the store is, whether any
    snapshot manifest exists (the `snapshots` view is a placeholder until one does)."""
    from .statement_sets.sets import read_index

    key = [sorted((r, str(f)) for r, f in folders.items()), str(store.root), has_manifests(store)]
    sets = read_index(store)["sets"]
    return stable_hash(key + [sorted(sets.items())] if sets else key, 16)  # no set: the key it always had


def has_manifests(store: "Store") -> bool:
    """Whether any snapshot manifest exists (stops at the first one found)."""
    try:
        with os.scandir(store.root / "snapshots") as entries:
            return any(e.is_dir() and os.path.exists(os.path.join(e.path, "manifest.json")) for e in entries)
    except FileNotFoundError:
        return False


def _fresh_views_for_reader(store: "Store", con) -> None:
    folders = store.folders()
    key = views_key(store, folders)
    found = con.sql("SELECT value FROM meta WHERE key = 'views_key'").fetchall()
    if found != [(key,)]:
        _create_views(store, con, folders, temp=True)


def _create_views(store: "Store", con, folders: dict | None = None, temp: bool = False) -> None:
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
    # Snapshots are a view over their manifests, so building one needs no catalog write.
    manifests = store.root / "snapshots"
    if has_manifests(store):
        glob = str(manifests / "*" / "manifest.json").replace("'", "''")
        con.execute(f"""CREATE OR REPLACE {kind}VIEW snapshots AS
            SELECT snapshot_id, repo_ids, kept_repo_ids, settings, counts, created_at::TIMESTAMPTZ AS created_at,
                   filename AS manifest_path
            FROM read_json('{glob}', filename = true, union_by_name = true)""")
    else:
        con.execute(f"""CREATE OR REPLACE {kind}VIEW snapshots AS SELECT NULL::VARCHAR AS snapshot_id,
            NULL::VARCHAR[] AS repo_ids, NULL::VARCHAR[] AS kept_repo_ids, NULL::JSON AS settings,
            NULL::JSON AS counts, NULL::TIMESTAMPTZ AS created_at, NULL::VARCHAR AS manifest_path WHERE false""")
    from .statement_sets.views import create_views as create_statement_views

    create_statement_views(store, con, kind)
    if not temp:
        from .forgetting import create_views

        create_views(con)  # over the metrics table, which `ensure` created first
        con.execute("INSERT OR REPLACE INTO meta VALUES ('store_root', ?)", [str(store.root)])
        con.execute("INSERT OR REPLACE INTO meta VALUES ('views_key', ?)", [key])
    con.execute("COMMIT")


def query(store: "Store", sql: str, params=None):
    """Run a read-only query; returns a pyarrow Table."""
    with connect(store) as con:
        return con.sql(sql, params=params).to_arrow_table()
