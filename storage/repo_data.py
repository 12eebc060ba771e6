"""`RepoData`: one repository at one commit, as tables, on its way into the store.

Importers (LeanDojo export, tracing) build it; `Store.add_repository` writes it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import pyarrow as pa

from . import schemas

_SORT_KEYS = {
    "files": ["path"],
    "theorems": ["file_path", "full_name"],
    "tactics": ["file_path", "full_name", "idx"],
    "premises": ["file_path", "idx", "full_name"],
}


@dataclass
class RepoData:
    """`repository` is one row of REPOSITORIES (a dict); the rest are Arrow tables."""

    repository: dict
    files: pa.Table
    theorems: pa.Table
    tactics: pa.Table
    premises: pa.Table

    @property
    def repo_id(self) -> str:
        return self.repository["repo_id"]

    def tables(self) -> dict[str, pa.Table]:
        return {"files": self.files, "theorems": self.theorems, "tactics": self.tactics, "premises": self.premises}

    def content_hash(self) -> str:
        """A hash of the data itself (not of when or from where it was ingested)."""
        return content_hash(self.repository, {name: (lambda t=t: t) for name, t in self.tables().items()})

    def write_tables(self, folder) -> None:
        """Write the four tables as `<name>.parquet` into `folder` (`Store` stages a repository so)."""
        import pyarrow.parquet as pq

        for name, table in self.tables().items():
            pq.write_table(table.cast(schemas.TABLES[name]), folder / f"{name}.parquet", compression="zstd")

    def row_counts(self) -> dict[str, int]:
        return {name: t.num_rows for name, t in self.tables().items()}

    def held_tables(self) -> tuple[pa.Table | None, pa.Table | None]:
        """(theorems, tactics) as held in memory (a staged repository holds none)."""
        return self.theorems, self.tactics


def content_hash(repository: dict, tables: dict) -> str:
    """The content hash of a repository row and its tables (`tables`: name -> a function that
    loads the table, so that only one is held at a time, or the table's Parquet file): each
    table sorted by its key and written as one Arrow IPC stream."""
    from .table_hash import hash_parquet, hash_whole

    h = hashlib.sha256()
    for key in ("url", "commit", "lean_version", "split_settings"):
        h.update(f"{key}={repository.get(key)}\x1f".encode())
    for name in ("files", "theorems", "tactics", "premises"):
        h.update(name.encode())
        if callable(tables[name]):  # loaded, cast, sorted and streamed into the hash (no buffer its size)
            hash_whole(h, tables[name]().cast(schemas.TABLES[name]), _SORT_KEYS[name])
        else:  # a Parquet file's path: hashed a part at a time, the same bytes
            hash_parquet(h, tables[name], schemas.TABLES[name], _SORT_KEYS[name])
    return h.hexdigest()
