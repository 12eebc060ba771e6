"""The dataset store: where it lives, how repositories are added, how it is read.

Layout under `<DOJOFLOW_HOME>/store/`:

    FORMAT_VERSION.json        {"format_version": N}; refused or migrated when it differs
    data/<repo_id>/            one folder per repository@commit, renamed into place whole:
        repositories.parquet files.parquet theorems.parquet tactics.parquet premises.parquet
    parts/                     per-repository snapshot parts (storage/snapshot.py)
    snapshots/<snapshot_id>/   snapshot manifests
    catalog.duckdb             views over data/, and the snapshots/checkpoints/metrics tables
    .lock                      the writer lock

A repository folder appears by one rename, so a reader sees a repository whole or
not at all, and a killed import leaves the store as it was.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from . import atomic, catalog, schemas
from .errors import FormatVersionError, InputError, RepositoryConflictError, StoreError
from .lock import file_lock
from .repo_data import RepoData

FORMAT_FILE = "FORMAT_VERSION.json"


def dojoflow_home(home: str | os.PathLike | None = None) -> Path:
    """`home`, else $DOJOFLOW_HOME, else `.dojoflow/` in the working directory."""
    if home is None:
        home = os.environ.get("DOJOFLOW_HOME") or ".dojoflow"
    return Path(home).expanduser().resolve()


@dataclass(frozen=True)
class AddResult:
    repo_id: str
    status: str  # "added" | "unchanged" | "replaced"
    counts: dict


class Store:
    """A handle on one store folder. Cheap to create; holds no open files."""

    def __init__(self, root: Path):
        self.root = Path(root).resolve()

    # -- opening ---------------------------------------------------------------------
    @classmethod
    def open(cls, home: str | os.PathLike | None = None, create: bool = True) -> "Store":
        store = cls(dojoflow_home(home) / "store")
        fmt = store.root / FORMAT_FILE
        if fmt.exists():
            store._check_format(fmt)
        elif create:
            store.root.mkdir(parents=True, exist_ok=True)
            atomic.write_json(fmt, {"format_version": schemas.FORMAT_VERSION, "store_id": uuid.uuid4().hex[:12]})
            catalog.ensure(store)
        else:
            raise StoreError(
                f"no Dojoflow store at {store.root}: run `dojoflow import` or `dojoflow run` first, "
                "or set DOJOFLOW_HOME to the folder that holds one"
            )
        return store

    def _check_format(self, fmt: Path) -> None:
        try:
            found = int(json.loads(fmt.read_text())["format_version"])
        except (ValueError, KeyError, TypeError) as e:
            raise StoreError(f"{fmt} is unreadable ({e}): it is not a Dojoflow store format file") from e
        if found != schemas.FORMAT_VERSION:
            raise FormatVersionError(self.root, found, schemas.FORMAT_VERSION)

    @property
    def instance_id(self) -> str:
        """Random at creation: cache keys carry it, so a deleted and re-created store
        never replays results that pointed into the old one."""
        return json.loads((self.root / FORMAT_FILE).read_text()).get("store_id", "v1")

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    @property
    def catalog_path(self) -> Path:
        return self.root / "catalog.duckdb"

    @contextmanager
    def writer(self, timeout: float = 0.0) -> Iterator["Store"]:
        """Hold the store's writer lock; clean what a killed writer left behind."""
        with file_lock(self.root / ".lock", timeout=timeout):
            atomic.remove_orphans(self.data_dir)
            atomic.remove_orphans(self.root / "parts")
            atomic.remove_orphans(self.root / "snapshots")
            yield self

    # -- repositories ----------------------------------------------------------------
    def repo_dir(self, repo_id: str) -> Path:
        return self.data_dir / repo_id

    def has_repository(self, repo_id: str) -> bool:
        return (self.repo_dir(repo_id) / "repositories.parquet").exists()

    def repo_ids(self) -> list[str]:
        if not self.data_dir.exists():
            return []
        return sorted(
            p.name for p in self.data_dir.iterdir() if p.is_dir() and atomic.TMP_MARK not in p.name
        )

    def repository(self, repo_id: str) -> dict:
        path = self.repo_dir(repo_id) / "repositories.parquet"
        if not path.exists():
            raise InputError(repo_id, "no such repository in the store", "run `dojoflow repos` to list them")
        # The same row as JSON beside the Parquet file: read ~50x faster, and read often.
        row = json.loads((self.repo_dir(repo_id) / "repository.json").read_text())
        for key in ("commit_time", "ingested_at"):
            if row[key] is not None:
                row[key] = datetime.fromisoformat(row[key])
        return row

    def repositories(self) -> list[dict]:
        return [self.repository(r) for r in self.repo_ids()]

    def find_repositories(self, url: str, commit: str | None = None) -> list[dict]:
        """Stored repositories whose url (and commit prefix, if given) match."""
        norm = url.rstrip("/").removesuffix(".git")
        out = []
        for r in self.repositories():
            if r["url"].rstrip("/").removesuffix(".git") != norm:
                continue
            if commit and not r["commit"].startswith(commit):
                continue
            out.append(r)
        return out

    def table_path(self, repo_id: str, table: str) -> Path:
        return self.repo_dir(repo_id) / f"{table}.parquet"

    def read_table(self, table: str, repo_ids: list[str] | None = None, columns=None) -> pa.Table:
        ids = self.repo_ids() if repo_ids is None else list(repo_ids)
        parts = [pq.read_table(self.table_path(r, table), columns=columns) for r in ids]
        if not parts:
            schema = schemas.TABLES[table]
            return schema.empty_table() if columns is None else schema.empty_table().select(columns)
        return pa.concat_tables(parts)

    def add_repository(self, data: RepoData, replace: bool = False) -> AddResult:
        """Write one repository whole. Call inside `with store.writer():`."""
        content_hash = data.content_hash()
        repo_id = data.repo_id
        counts = {name: t.num_rows for name, t in data.tables().items()}
        status = "added"
        if self.has_repository(repo_id):
            old = self.repository(repo_id)["content_hash"]
            if old == content_hash:
                return AddResult(repo_id, "unchanged", counts)
            if not replace:
                raise RepositoryConflictError(repo_id, old, content_hash)
            status = "replaced"
        row = dict(data.repository)
        row["content_hash"] = content_hash
        row["format_version"] = schemas.FORMAT_VERSION
        row.setdefault("ingested_at", datetime.now(timezone.utc).replace(microsecond=0))
        repo_table = pa.Table.from_pylist([row], schema=schemas.REPOSITORIES)
        with atomic.atomic_path(self.repo_dir(repo_id)) as tmp:
            tmp.mkdir(parents=True)
            pq.write_table(repo_table, tmp / "repositories.parquet")
            (tmp / "repository.json").write_text(json.dumps(row, default=str, sort_keys=True))
            for name, table in data.tables().items():
                table = table.cast(schemas.TABLES[name])
                pq.write_table(table, tmp / f"{name}.parquet", compression="zstd")
        catalog.refresh_views(self)
        # Training rows under the default snapshot settings are derived once, here, so
        # that a curriculum step's snapshot only lists them (storage/snapshot.py).
        from .snapshot import SnapshotSettings, build_parts

        build_parts(self, self.repository(repo_id), SnapshotSettings())
        return AddResult(repo_id, status, counts)

    def remove_repository(self, repo_id: str) -> None:
        path = self.repo_dir(repo_id)
        if path.exists():
            trash = atomic.temp_sibling(path)
            os.replace(path, trash)
            shutil.rmtree(trash, ignore_errors=True)
            catalog.refresh_views(self)
