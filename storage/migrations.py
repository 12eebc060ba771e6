"""One-step migrations of the store's format (version N -> N+1), applied in order.

    dojoflow migrate [--home HOME]          # or: python -c "from storage.migrations import migrate; migrate()"

`Store.open` refuses a store whose FORMAT_VERSION.json names an older version and
points here. `migrate` takes the writer lock, then runs each registered step from
the store's version up to `schemas.FORMAT_VERSION`; after each step it rewrites
FORMAT_VERSION.json (atomically) with the new version and the step appended to its
`migrations` history. Steps are idempotent and atomic where the medium allows (a
DuckDB transaction for the catalog, a rename for files), so a migration killed
midway leaves the store at the last version it finished, and running it again
resumes. A store from a newer Dojoflow is refused: nothing migrates backwards.

A step freezes the DDL of the version it writes (it must not use today's
`catalog.RECORD_TABLES`, which a later version will change).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from . import atomic, catalog, schemas
from .errors import DojoflowError, FormatVersionError, MigrationError, StoreError
from .lock import file_lock
from .store import FORMAT_FILE, Store, dojoflow_home


@dataclass(frozen=True)
class Migration:
    """Brings a store from `from_version` to `from_version + 1`."""

    from_version: int
    description: str
    apply: Callable[[Store], None]

    @property
    def to_version(self) -> int:
        return self.from_version + 1


MIGRATIONS: dict[int, Migration] = {}


def step(from_version: int, description: str):
    """Register `fn(store)` as the migration from `from_version` to the next version."""

    def register(fn: Callable[[Store], None]) -> Callable[[Store], None]:
        if from_version in MIGRATIONS:
            raise RuntimeError(f"two migrations from format version {from_version}")
        MIGRATIONS[from_version] = Migration(from_version, description, fn)
        return fn

    return register


@dataclass(frozen=True)
class MigrationReport:
    store_root: str
    from_version: int
    to_version: int
    steps: tuple[str, ...]  # "1 -> 2: what changed", one per step run


def migrate(home: str | os.PathLike | None = None, lock_timeout: float = 0.0) -> MigrationReport:
    """Bring the store in `home` (default $DOJOFLOW_HOME) to this Dojoflow's format version."""
    target = schemas.FORMAT_VERSION
    store = Store(dojoflow_home(home) / "store")
    if not (store.root / FORMAT_FILE).exists():
        raise StoreError(
            f"no Dojoflow store at {store.root}: nothing to migrate. Pass --home (or set "
            "DOJOFLOW_HOME) to the folder that holds the store"
        )
    # The writer lock itself, not `store.writer()`: its clean-up reads REPOSITORIES.json,
    # which a version 1 store lacks until the first step writes it.
    with file_lock(store.root / ".lock", timeout=lock_timeout):
        start = version = store.format_version()
        if version > target:
            raise FormatVersionError(store.root, version, target)
        done = []
        while version < target:
            m = MIGRATIONS.get(version)
            if m is None:
                raise MigrationError(store.root, version, target, f"no migration from version {version} is registered")
            try:
                m.apply(store)
            except DojoflowError:
                raise
            except Exception as e:  # a bug or a damaged store: say which step, keep the cause
                raise MigrationError(store.root, version, m.to_version, f"step `{m.description}` failed: {e!r}") from e
            _record(store, m)
            done.append(f"{m.from_version} -> {m.to_version}: {m.description}")
            version = m.to_version
    return MigrationReport(str(store.root), start, version, tuple(done))


def _record(store: Store, m: Migration) -> None:
    """The version bump, written only once the step is complete."""
    meta = store.format_meta()
    meta["format_version"] = m.to_version
    meta.setdefault("migrations", []).append(
        {
            "from": m.from_version,
            "to": m.to_version,
            "description": m.description,
            "at": datetime.now(UTC).isoformat(timespec="seconds"),
        }
    )
    atomic.write_json(store.root / FORMAT_FILE, meta)


# -- 1 -> 2 --------------------------------------------------------------------------
_METRICS_V2 = """
    CREATE TABLE metrics_v2 (
        run_id VARCHAR, step INTEGER, step_repo_id VARCHAR, repo_id VARCHAR,
        trainer VARCHAR, split_kind VARCHAR, split VARCHAR, metric VARCHAR,
        value DOUBLE, count BIGINT, checkpoint_id VARCHAR,
        recorded_at TIMESTAMPTZ DEFAULT now(),
        PRIMARY KEY (run_id, checkpoint_id, repo_id, split_kind, split, metric))"""
_METRICS_V2_KEY = ["run_id", "checkpoint_id", "repo_id", "split_kind", "split", "metric"]
_METRICS_COLUMNS = (
    "step, step_repo_id, repo_id, trainer, split_kind, split, metric, value, count, checkpoint_id, recorded_at"
)


@step(1, "metrics keep every run (run_id joins their key); REPOSITORIES.json lists the repositories")
def _v1_to_v2(store: Store) -> None:
    # The commit record lists what version 1 showed: every finished folder in data/.
    if not store.index_path.exists():
        listed = {}
        if store.data_dir.exists():
            for p in sorted(store.data_dir.iterdir()):
                if p.is_dir() and atomic.TMP_MARK not in p.name and (p / "repositories.parquet").exists():
                    listed[p.name] = f"data/{p.name}"
        store._write_index({"generation": 1, "repositories": listed})

    # metrics: rebuilt under the new key, rows copied, all in one transaction. Version 1
    # never wrote a NULL run_id; should one exist, it becomes '' (a key cannot be NULL).
    if store.catalog_path.exists():
        with catalog.connect(store, write=True) as con:
            pk = con.sql("""SELECT constraint_column_names FROM duckdb_constraints()
                            WHERE table_name = 'metrics' AND constraint_type = 'PRIMARY KEY'""").fetchall()
            if pk and list(pk[0][0]) != _METRICS_V2_KEY:
                con.execute("BEGIN TRANSACTION")
                con.execute("DROP TABLE IF EXISTS metrics_v2")
                con.execute(_METRICS_V2)
                con.execute(
                    f"INSERT INTO metrics_v2 (run_id, {_METRICS_COLUMNS}) "
                    f"SELECT coalesce(run_id, ''), {_METRICS_COLUMNS} FROM metrics"
                )
                con.execute("DROP TABLE metrics")
                con.execute("ALTER TABLE metrics_v2 RENAME TO metrics")
                con.execute("COMMIT")
    # Views over the listed folders (and any record table the catalog lacks).
    catalog.ensure(store)
