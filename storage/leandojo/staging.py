"""Repositories staged on disk by the streaming import (storage/leandojo/stream.py): their
tables written as Parquet in row groups of bounded size, ready to move into the store.

`StagedRepo` is what `Store.add_repositories` takes besides `RepoData`: it hashes its
tables from the files (one at a time, `repo_data.content_hash`, the same hash) and moves
them into the store's staging folder instead of writing them.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from ..repo_data import RepoData, content_hash

TABLE_NAMES = ("files", "theorems", "tactics", "premises")


class WriterPool:
    """The table writers of one import, sharing one bound on the rows they buffer."""

    def __init__(self, limit_bytes: int):
        self.limit = limit_bytes
        self.writers: list[TableWriter] = []

    def buffered(self) -> int:
        return sum(w.nbytes for w in self.writers)

    def added(self) -> None:
        if self.buffered() > self.limit:
            for w in self.writers:
                w.flush()


class TableWriter:
    """A table written a row group at a time: rows are buffered until the pool's bound, then
    written as one row group (so a table that fits the bound is written exactly as
    `pq.write_table` writes it whole: the same bytes)."""

    def __init__(self, path: Path, schema: pa.Schema, pool: WriterPool, scratch: bool = False):
        self.path, self.schema, self.pool = path, schema, pool
        self.scratch = scratch  # a file only read back (`pieces`): Arrow IPC, no Parquet writer's buffers
        self.buffer: list[pa.Table] = []
        self.nbytes = 0
        self.rows = 0
        self.writer: pq.ParquetWriter | None = None
        pool.writers.append(self)

    def add(self, table: pa.Table) -> None:
        self.buffer.append(table)
        self.nbytes += table.nbytes
        self.rows += table.num_rows
        self.pool.added()

    def flush(self) -> None:
        if not self.buffer:
            return
        table = pa.concat_tables(self.buffer).combine_chunks().cast(self.schema)
        self.buffer, self.nbytes = [], 0
        if self.writer is None:
            self.writer = (
                pa.ipc.new_stream(pa.OSFile(str(self.path), "wb"), table.schema)
                if self.scratch
                else pq.ParquetWriter(self.path, table.schema, compression="zstd")
            )
        self.writer.write_table(table)

    def close(self) -> int:
        """Write what is left; the number of rows written."""
        if self.writer is None:
            table = pa.concat_tables(self.buffer or [self.schema.empty_table()]).combine_chunks()
            self.buffer, self.nbytes = [], 0
            self.write_whole(self.path, table, self.schema)
        else:
            self.flush()
            self.writer.close()
        self.pool.writers.remove(self)
        return self.rows

    def pieces(self):
        """The rows added, in order, as tables of at most the pool's bound (read back from the
        file when some were written), then nothing is left: the file is removed."""
        if self.writer is None:
            yield from self.buffer
            self.buffer, self.nbytes = [], 0
            self.pool.writers.remove(self)
            return
        self.flush()
        self.writer.close()
        self.pool.writers.remove(self)
        with pa.OSFile(str(self.path), "rb") as f:
            for batch in pa.ipc.open_stream(f):
                yield pa.Table.from_batches([batch])
        self.path.unlink()

    @staticmethod
    def write_whole(path: Path, table: pa.Table, schema: pa.Schema) -> None:
        pq.write_table(table.cast(schema), path, compression="zstd")


class StagedRepo:
    """A repository whose tables are Parquet files in `folder`; its row of REPOSITORIES."""

    def __init__(self, repository: dict, folder: Path, counts: dict[str, int]):
        self.repository = repository
        self.folder = folder
        self.counts = counts
        self._hash: str | None = None

    @classmethod
    def from_repo_data(cls, data: RepoData, folder: Path) -> StagedRepo:
        folder.mkdir(parents=True)
        data.write_tables(folder)
        return cls(data.repository, folder, data.row_counts())

    @property
    def repo_id(self) -> str:
        return self.repository["repo_id"]

    def content_hash(self) -> str:
        if self._hash is None:
            files = {name: self.folder / f"{name}.parquet" for name in TABLE_NAMES}
            self._hash = content_hash(self.repository, files)  # a part at a time (storage/table_hash.py)
        return self._hash

    def write_tables(self, folder: Path) -> None:
        """Move the tables into `folder` (the store's staging folder for this repository)."""
        for name in TABLE_NAMES:
            shutil.move(self.folder / f"{name}.parquet", folder / f"{name}.parquet")

    def row_counts(self) -> dict[str, int]:
        return dict(self.counts)

    def held_tables(self) -> tuple[None, None]:
        return None, None
