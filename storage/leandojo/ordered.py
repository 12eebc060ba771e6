"""The export's fast path for a repository stored in its export order (issue 24).

An imported repository's theorems are stored in the order its export listed them, and its
tactics theorem by theorem in that order (storage/leandojo/tables.py). Then the theorem
records can be built reading each Parquet file once, in order: a chunk of theorems and the
tactics that follow it, handed to DuckDB as Arrow tables. The general path
(`write._write_repository_theorems`) scans the repository's tactics again for every chunk
to find a chunk's rows, which was most of the export's CPU (benchmarks/README.md). The
records are built by the same SQL expressions, so the bytes written are the same.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .. import schemas

# Tactic rows per DuckDB query: one query per chunk holds its tactics' JSON (a few MiB here).
CHUNK_TACTICS = 16_384
_THEOREM_COLUMNS = [
    "theorem_id",
    "file_path",
    "full_name",
    "theorem_statement",
    "start",
    "end",
    "num_tactics",
    "split_random",
    "split_novel_premises",
    "extra",
]
_TACTIC_COLUMNS = [
    "theorem_id",
    "idx",
    "tactic",
    "annotated_tactic",
    "annotations",
    "state_before",
    "state_after",
    "extra",
]
_CHUNK_SQL = """
WITH tac AS (
    SELECT theorem_id,
           list(json_object('tactic', tactic, 'annotated_tactic', json_array(annotated_tactic, annotations),
                            'state_before', state_before, 'state_after', state_after) ORDER BY idx) AS tactics,
           CASE WHEN bool_or(extra IS NOT NULL) THEN list(extra ORDER BY idx) END AS tactic_extras
    FROM tac_chunk GROUP BY theorem_id)
SELECT th.split_random, th.split_novel_premises,
       json_object('url', $url, 'commit', $commit, 'file_path', th.file_path, 'full_name', th.full_name,
                   'theorem_statement', th.theorem_statement, 'start', th.start, 'end', th."end",
                   'traced_tactics', coalesce(to_json(tac.tactics), '[]'::JSON))::VARCHAR AS rec,
       th.extra, tac.tactic_extras
FROM th_chunk th LEFT JOIN tac USING (theorem_id)
ORDER BY th.pos
"""


def in_export_order(rows: np.ndarray, theorems: pa.Table, tactics_path: str) -> bool:
    """True when the theorems are stored in export order (`rows`, the file rows in export
    order, is 0, 1, 2, ...) and the tactics theorem by theorem in that order, by `idx`."""
    if not np.array_equal(rows, np.arange(len(rows))):
        return False
    tac = pq.read_table(tactics_path, columns=["theorem_id", "idx"])
    counts = theorems["num_tactics"].to_numpy()
    if tac.num_rows != int(counts.sum()):
        return False
    parent = np.repeat(np.arange(len(counts)), counts)
    expected_idx = np.arange(tac.num_rows) - np.repeat(np.cumsum(counts) - counts, counts)
    return bool(
        pc.all(pc.equal(tac["theorem_id"], theorems["theorem_id"].take(pa.array(parent)))).as_py() is not False
        and np.array_equal(tac["idx"].to_numpy(), expected_idx)
    )


def write_in_order(con, repo: dict, theorems_path: str, tactics_path: str, rows: np.ndarray, route) -> int | None:
    """Route the repository's records to the split files (`route(batch)`, as the general path
    does); None, writing nothing, when the repository is not stored in export order."""
    theorems = pq.read_table(theorems_path, columns=_THEOREM_COLUMNS).cast(
        pa.schema([schemas.THEOREMS.field(c) for c in _THEOREM_COLUMNS])
    )
    if not in_export_order(rows, theorems, tactics_path):
        return None
    tactic_schema = pa.schema([schemas.TACTICS.field(c) for c in _TACTIC_COLUMNS])
    reader = _Rows(pq.ParquetFile(tactics_path), tactic_schema)
    counts = theorems["num_tactics"].to_numpy()
    params = {"url": repo["url"], "commit": repo["commit"]}
    count, start = 0, 0
    while start < theorems.num_rows:
        end = _chunk_end(counts, start)
        th_chunk = theorems.slice(start, end - start)
        th_chunk = th_chunk.append_column("pos", pa.array(np.arange(end - start, dtype=np.int64)))
        tac_chunk = reader.take(int(counts[start:end].sum()))  # noqa: F841 (read by DuckDB by name)
        for batch in con.sql(_CHUNK_SQL, params=params).to_arrow_reader(512):
            count += route(batch)
        start = end
    return count


def _chunk_end(counts: np.ndarray, start: int) -> int:
    """The end of the chunk of theorems from `start`: about CHUNK_TACTICS tactics, at least one theorem."""
    total = np.cumsum(counts[start:])
    return start + max(1, int(np.searchsorted(total, CHUNK_TACTICS, side="right")))


class _Rows:
    """A Parquet file's rows, taken in order a number at a time."""

    def __init__(self, file: pq.ParquetFile, schema: pa.Schema):
        self.batches = file.iter_batches(batch_size=8192, columns=schema.names)
        self.schema = schema
        self.pending: list[pa.RecordBatch] = []
        self.have = 0

    def take(self, n: int) -> pa.Table:
        while self.have < n:
            batch = next(self.batches)
            self.pending.append(batch)
            self.have += batch.num_rows
        table = pa.Table.from_batches(self.pending).cast(self.schema)
        out, rest = table.slice(0, n), table.slice(n)
        self.pending = rest.combine_chunks().to_batches() if rest.num_rows else []
        self.have = rest.num_rows
        return out
