"""The dataset store: where it lives, how repositories are added, how it is read.

Layout under `<DOJOFLOW_HOME>/store/`:

    FORMAT_VERSION.json        {"format_version": N, "store_id", "migrations"}; an older
                               store is refused until `dojoflow migrate` (storage/migrations.py)
    REPOSITORIES.json          the commit record: {"generation", "repositories": {repo_id: folder}}
    data/<repo_id>@<hash>/     one folder per repository@commit and content:
        repository.json repositories.parquet files.parquet theorems.parquet tactics.parquet premises.parquet
    parts/                     per-repository snapshot parts (storage/snapshot.py)
    snapshots/<snapshot_id>/   snapshot manifests
    catalog.duckdb             views over data/, and the checkpoints/metrics/runs tables
    .lock                      the writer lock; catalog.lock: the catalog's reader/writer lock

A repository is visible when REPOSITORIES.json lists it, and nothing else makes it
so. An import stages every repository's folder first and then replaces that one
file, so all repositories of an export (and any replacements) appear in one
rename, or none do. Folders a killed import staged are unlisted, invisible, and
removed by the next writer.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from . import atomic, catalog, forgetting, schemas, snapshot_ref
from .errors import DamagedStoreError, FormatVersionError, InputError, RepositoryConflictError, StoreError, some_names
from .lock import file_lock
from .repo_data import RepoData
from .repo_folder import read_repository
from .repo_urls import same_repository
from .snapshot import SnapshotSettings, build_parts
from .statement_sets import views as statement_set_views

FORMAT_FILE = "FORMAT_VERSION.json"
INDEX_FILE = "REPOSITORIES.json"


MAX_FORMAT_FILE_BYTES = 1 << 20


def _read_small_file(path: Path) -> bytes:
    """A regular file's bytes, at most MAX_FORMAT_FILE_BYTES (ValueError otherwise): a format
    file linked to /dev/zero or a FIFO is not read for ever."""
    import stat

    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError("not a regular file")
        data = os.read(fd, MAX_FORMAT_FILE_BYTES + 1)
        if len(data) > MAX_FORMAT_FILE_BYTES:
            raise ValueError(f"larger than {MAX_FORMAT_FILE_BYTES} bytes")
        return data
    finally:
        os.close(fd)


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

    # The views each table module declares over its data, in the order the catalog builds them
    # (after its views over the repositories' tables; storage/catalog.py `Views`).
    views = (snapshot_ref.CATALOG_VIEWS, statement_set_views.CATALOG_VIEWS, forgetting.CATALOG_VIEWS)

    def __init__(self, root: Path):
        self.root = Path(root).resolve()

    # -- opening ---------------------------------------------------------------------
    @classmethod
    def open(cls, home: str | os.PathLike | None = None, create: bool = True) -> "Store":
        store = cls(dojoflow_home(home) / "store")
        fmt = store.root / FORMAT_FILE
        if fmt.exists():
            store._check_format()
        elif create:
            store.root.mkdir(parents=True, exist_ok=True)
            # Under the writer lock: two processes creating one store must not both write
            # it (the second would replace the first one's index and store id).
            with file_lock(store.root / ".lock", timeout=60):
                if fmt.exists():
                    store._check_format()
                    return store
                # The index first: FORMAT_VERSION.json is what marks a folder as a store.
                if not store.index_path.exists():
                    store._write_index({"generation": 0, "repositories": {}})
                atomic.write_json(fmt, {"format_version": schemas.FORMAT_VERSION, "store_id": uuid.uuid4().hex[:12]})
                catalog.ensure(store)
        else:
            raise StoreError(
                f"no Dojoflow store at {store.root}: run `dojoflow import` or `dojoflow run` first, "
                "or set DOJOFLOW_HOME to the folder that holds one"
            )
        return store

    def format_meta(self) -> dict:
        """FORMAT_VERSION.json as a dict (format_version, store_id, migrations)."""
        fmt = self.root / FORMAT_FILE
        try:
            meta = json.loads(_read_small_file(fmt))
            version = meta["format_version"]
            if type(version) is not int or version < 1:  # `true` once counted as 1 and was migrated
                raise ValueError(f"format_version is {json.dumps(version)[:40]}, not a version number")
            return meta
        except (ValueError, KeyError, TypeError) as e:
            raise StoreError(f"{fmt} is unreadable ({e}): it is not a Dojoflow store format file") from e

    def format_version(self) -> int:
        return int(self.format_meta()["format_version"])

    def _check_format(self) -> None:
        found = self.format_version()
        if found != schemas.FORMAT_VERSION:
            raise FormatVersionError(self.root, found, schemas.FORMAT_VERSION)

    @property
    def instance_id(self) -> str:
        """Random at creation: cache keys carry it, so a deleted and re-created store
        never replays results that pointed into the old one."""
        return self.format_meta().get("store_id", "v1")

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    @property
    def catalog_path(self) -> Path:
        return self.root / "catalog.duckdb"

    @property
    def index_path(self) -> Path:
        return self.root / INDEX_FILE

    @contextmanager
    def writer(self, timeout: float = 0.0) -> Iterator["Store"]:
        """Hold the store's writer lock; clean what a killed writer left behind."""
        with file_lock(self.root / ".lock", timeout=timeout):
            atomic.remove_orphans(self.data_dir)
            atomic.remove_orphans(self.root / "parts")
            atomic.remove_orphans(self.root / "snapshots")
            self._remove_unlisted()
            yield self

    # -- the commit record -----------------------------------------------------------
    def _read_index(self) -> dict:
        try:
            index = json.loads(self.index_path.read_text())
            index["repositories"]  # noqa: B018  (checks the shape)
            return index
        except FileNotFoundError:
            if any(self._repo_folders()):
                raise StoreError(
                    f"{self.index_path} is missing but {self.data_dir} holds repositories: the store is damaged. "
                    "Restore the file from a backup, or move the store aside and import again"
                ) from None
            return {"generation": 0, "repositories": {}}
        except (ValueError, KeyError, TypeError) as e:
            raise StoreError(
                f"{self.index_path} is unreadable ({e}): restore it from a backup, "
                "or move the store aside and import again"
            ) from e

    def _write_index(self, index: dict) -> None:
        """The commit point of every change to the set of repositories: one rename."""
        atomic.write_json(self.index_path, index)

    def _repo_folders(self) -> Iterator[Path]:
        """Folders under data/ that a writer finished (listed or not)."""
        if self.data_dir.exists():
            for p in self.data_dir.iterdir():
                if p.is_dir() and atomic.TMP_MARK not in p.name and (p / "repository.json").exists():
                    yield p

    def _remove_unlisted(self) -> None:
        """Delete finished folders no commit lists: staged by a killed import, or
        replaced ones whose removal was cut short. Call with the writer lock held."""
        if not self.data_dir.exists():
            return
        listed = set(self.folders().values())  # root / "data/<name>", as _repo_folders builds them
        for p in list(self._repo_folders()):
            if p not in listed:
                atomic.remove_tree(p)

    # -- repositories ----------------------------------------------------------------
    def folders(self) -> dict[str, Path]:
        """{repo_id: its folder} for every visible repository, read once (consistent)."""
        return {r: self.root / f for r, f in sorted(self._read_index()["repositories"].items())}

    def repo_dir(self, repo_id: str) -> Path:
        folder = self._read_index()["repositories"].get(repo_id)
        if folder is None:
            raise InputError(repo_id, "no such repository in the store", "run `dojoflow repos` to list them")
        return self.root / folder

    def has_repository(self, repo_id: str) -> bool:
        return repo_id in self._read_index()["repositories"]

    def repo_ids(self) -> list[str]:
        return sorted(self._read_index()["repositories"])

    def repository(self, repo_id: str) -> dict:
        return read_repository(self.repo_dir(repo_id))

    def repositories(self) -> list[dict]:
        return [read_repository(f) for f in self.folders().values()]

    def find_repositories(self, url: str, commit: str | None = None) -> list[dict]:
        """Stored repositories whose url (and commit prefix, if given) match."""
        out = []
        for r in self.repositories():
            if not same_repository(r["url"], url):
                continue
            if commit and not r["commit"].startswith(commit):
                continue
            out.append(r)
        return out

    def table_path(self, repo_id: str, table: str) -> Path:
        return self.repo_dir(repo_id) / f"{table}.parquet"

    def read_table(self, table: str, repo_ids: list[str] | None = None, columns=None) -> pa.Table:
        folders = self.folders()
        ids = list(folders) if repo_ids is None else list(repo_ids)
        missing = [r for r in ids if r not in folders]
        if missing:
            raise InputError(
                some_names(missing), "no such repository in the store", "run `dojoflow repos` to list them"
            )
        parts = [_read_parquet(folders[r] / f"{table}.parquet", self.root, columns) for r in ids]
        if not parts:
            schema = schemas.TABLES[table]
            return schema.empty_table() if columns is None else schema.empty_table().select(columns)
        return pa.concat_tables(parts)

    # -- writing ---------------------------------------------------------------------
    def ingest(self, repos: list[RepoData], replace: bool = False, lock_timeout: float = 0.0) -> list["AddResult"]:
        """Take the writer lock and add `repos` together (see `add_repositories`)."""
        with self.writer(timeout=lock_timeout):
            return self.add_repositories(repos, replace=replace)

    def add_repository(self, data: RepoData, replace: bool = False) -> "AddResult":
        """Write one repository whole. Call inside `with store.writer():`."""
        return self.add_repositories([data], replace=replace)[0]

    def add_repositories(self, repos: list[RepoData], replace: bool = False) -> list["AddResult"]:
        """Add several repositories as one change: all of them become visible in one
        rename of REPOSITORIES.json, or none does. Call inside `with store.writer():`.

        Every repository is checked for conflicts before anything is written; then
        each is staged in its own folder (invisible); then the index is replaced.
        What follows the commit (catalog views, removing replaced folders, snapshot
        parts) is derived and redone by the next writer or reader if cut short.
        """
        index = self._read_index()
        listed = dict(index["repositories"])
        plan = []
        for data in repos:
            content_hash = data.content_hash()
            status = "added"
            if data.repo_id in listed:
                old = read_repository(self.root / listed[data.repo_id])["content_hash"]
                if old == content_hash:
                    status = "unchanged"
                elif not replace:
                    raise RepositoryConflictError(data.repo_id, old, content_hash)
                else:
                    status = "replaced"
            plan.append((data, content_hash, status))

        staged = {data.repo_id: self._stage(data, h) for data, h, status in plan if status != "unchanged"}
        replaced = [self.root / listed[r] for r in staged if r in listed]
        if staged:
            listed.update(staged)
            self._write_index({"generation": int(index.get("generation", 0)) + 1, "repositories": listed})
        catalog.refresh_views(self)  # also repairs views a killed import left stale
        for folder in replaced:
            atomic.remove_tree(folder)
        # Training rows under the default snapshot settings are derived once, here, so
        # that a curriculum step's snapshot only lists them (storage/snapshot.py).
        tables = {d.repo_id: d for d, _, _ in plan}
        for rid in staged:
            theorems, tactics = tables[rid].held_tables()
            if theorems is None:  # a streamed import holds none: read back (cast: Parquet names list items `element`)
                theorems = self.read_table("theorems", [rid])
                tactics = self.table_path(rid, "tactics")  # read by build_parts, a row group at a time
            build_parts(
                self,
                self.repository(rid),
                SnapshotSettings(),
                theorems=theorems.cast(schemas.THEOREMS),
                tactics=tactics if isinstance(tactics, Path) else tactics.cast(schemas.TACTICS),
            )
        return [AddResult(d.repo_id, status, d.row_counts()) for d, _, status in plan]

    def _stage(self, data: RepoData, content_hash: str) -> str:
        """Write one repository into a new, unlisted folder; return it relative to the root."""
        row = dict(data.repository)
        row["content_hash"] = content_hash
        row["format_version"] = schemas.FORMAT_VERSION
        row.setdefault("ingested_at", datetime.now(UTC).replace(microsecond=0))
        repo_table = pa.Table.from_pylist([row], schema=schemas.REPOSITORIES)
        # An unlisted folder of this name, left by a killed import, is gone already
        # (`writer` removes unlisted folders), and atomic_path would replace it anyway.
        folder = self.data_dir / f"{data.repo_id}@{content_hash[:12]}"
        with atomic.atomic_path(folder) as tmp:
            tmp.mkdir(parents=True)
            pq.write_table(repo_table, tmp / "repositories.parquet", compression="zstd")
            data.write_tables(tmp)
            (tmp / "repository.json").write_text(json.dumps(row, default=str, sort_keys=True))
        return str(folder.relative_to(self.root))


def _read_parquet(path: Path, store_root: Path, columns) -> pa.Table:
    try:
        return pq.read_table(path, columns=columns)
    except (pa.ArrowInvalid, OSError) as e:  # truncated or overwritten: `dojoflow repair` drops it
        raise DamagedStoreError(path, str(e).splitlines()[0], store_root) from e
