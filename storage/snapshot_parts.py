"""The tactic parts of `snapshot.build_parts`, from a repository's tactics a part at a time (issue 24).

A repository's tactics are filtered (`sorry`, `no goals`), given their theorem's proof
length and sent to their theorem's split, piece by piece: a tactics table held in memory
is one piece and is written exactly as before (one `pq.write_table` per part); a stored
tactics file of several row groups (a streamed import cut it so: it did not fit the
import's memory bound) is read a row group at a time, and each part is written in row
groups of about one source row group. Those parts hold the same rows in the same order;
their Parquet layout (row groups, pages) differs from a whole-table write, which would need
the whole table in memory.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from . import schemas
from .memory import release_arrow_memory
from .tactic_text import finished_mask, sorry_mask


def tactic_pieces(tactics: pa.Table | Path | None, store, rid: str):
    """(an iterator of tactics tables cast to TACTICS, whether it streams): `tactics` as held,
    or the stored file (a Path or None: the repository's), whole when it is one row group."""
    if isinstance(tactics, pa.Table):
        return iter([tactics]), False
    path = tactics if tactics is not None else store.table_path(rid, "tactics")
    pf = pq.ParquetFile(path)
    if pf.num_row_groups <= 1:
        table = pq.read_table(path)
        return iter([table.cast(schemas.TACTICS) if isinstance(tactics, Path) else table]), False
    return (pf.read_row_group(i).cast(schemas.TACTICS) for i in range(pf.num_row_groups)), True


def write_tactic_parts(
    folder: Path, theorems: pa.Table, pieces, streamed: bool, settings
) -> tuple[pa.ChunkedArray, dict]:
    """Write `<kind>/<split>/tactics.parquet` under `folder` (the split folders exist); return
    (training rows kept per theorem, in `theorems`' order; tactics per kind and split)."""
    ids = theorems["theorem_id"]
    splits = {
        (kind, split): pc.filter(ids, pc.equal(theorems[f"split_{kind}"], split))
        for kind in schemas.SPLIT_KINDS
        for split in schemas.SPLITS
    }
    writers = {key: _PartWriter(folder / key[0] / key[1] / "tactics.parquet", streamed) for key in splits}
    rows = np.zeros(len(theorems), np.int64)
    for tactics in pieces:
        if settings.drop_sorry:
            tactics = tactics.filter(pc.invert(sorry_mask(tactics["tactic"])))
        if settings.drop_no_goals:
            tactics = tactics.filter(pc.invert(finished_mask(tactics["state_before"])))
        # Each tactic row carries its theorem's proof length; each theorem, its rows kept.
        at = pc.index_in(tactics["theorem_id"], value_set=ids)
        tactics = tactics.append_column("num_tactics", pc.take(theorems["num_tactics"], at).cast(pa.int64()))
        rows += np.bincount(np.asarray(pc.drop_null(at).to_numpy()), minlength=len(rows))
        for key, value_set in splits.items():
            writers[key].add(tactics.filter(pc.is_in(tactics["theorem_id"], value_set=value_set)))
        del tactics
    counts = {kind: {} for kind in schemas.SPLIT_KINDS}
    for (kind, split), writer in writers.items():
        counts[kind][split] = writer.close()
    if streamed:
        release_arrow_memory()  # the pieces' pages, freed (storage/memory.py)
    cuts = np.cumsum([len(c) for c in ids.chunks])[:-1]  # chunked as the theorems, as it was
    return pa.chunked_array([pa.array(r, pa.int64()) for r in np.split(rows, cuts)], pa.int64()), counts


class _PartWriter:
    """One part's tactics: held and written whole (not streamed), else a row group per piece."""

    def __init__(self, path: Path, streamed: bool):
        self.path, self.streamed = path, streamed
        self.held: list[pa.Table] = []
        self.writer: pq.ParquetWriter | None = None
        self.rows = 0

    def add(self, table: pa.Table) -> None:
        table = table.select(schemas.SNAPSHOT_TACTICS.names).cast(schemas.SNAPSHOT_TACTICS)
        self.rows += table.num_rows
        if not self.streamed:
            self.held.append(table)
        elif table.num_rows:
            if self.writer is None:
                self.writer = pq.ParquetWriter(self.path, schemas.SNAPSHOT_TACTICS, compression="zstd")
            self.writer.write_table(table)

    def close(self) -> int:
        if self.writer is not None:
            self.writer.close()
        else:
            table = pa.concat_tables(self.held) if self.held else schemas.SNAPSHOT_TACTICS.empty_table()
            pq.write_table(table, self.path, compression="zstd")
        self.held = []
        return self.rows
