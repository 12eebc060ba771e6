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
        h = hashlib.sha256()
        r = self.repository
        for key in ("url", "commit", "lean_version", "split_settings"):
            h.update(f"{key}={r.get(key)}\x1f".encode())
        for name, table in self.tables().items():
            table = (
                table.cast(schemas.TABLES[name]).sort_by([(k, "ascending") for k in _SORT_KEYS[name]]).combine_chunks()
            )
            sink = pa.BufferOutputStream()
            with pa.ipc.new_stream(sink, table.schema) as writer:
                writer.write_table(table)
            h.update(name.encode())
            h.update(sink.getvalue().to_pybytes())
        return h.hexdigest()
