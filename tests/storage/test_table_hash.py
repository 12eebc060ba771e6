"""storage/table_hash.py: a stored table's part of the content hash, a chunk at a time, is
the bytes of the whole-table hash (`repo_data.content_hash`'s sorted one-batch IPC stream)."""

from __future__ import annotations

import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from storage import schemas
from storage.repo_data import _SORT_KEYS
from storage.table_hash import hash_parquet, hash_whole


class _Bytes:
    """A stand-in for the hash that keeps what it is given, to compare bytes, not digests."""

    def __init__(self):
        self.data = bytearray()

    def update(self, data) -> None:
        self.data += bytes(data)


def _value(rng: random.Random, t: pa.DataType, nullable: bool):
    if nullable and rng.random() < 0.3:
        return None
    if pa.types.is_string(t):
        return "".join(rng.choice("ab\u00e9x") for _ in range(rng.randint(0, 6)))
    if pa.types.is_integer(t):
        return rng.randint(-5, 1000)
    if pa.types.is_boolean(t):
        return rng.random() < 0.5
    if pa.types.is_list(t):
        return [_value(rng, t.value_type, False) for _ in range(rng.choice([0, 0, 1, 2, 3]))]
    return {f.name: _value(rng, f.type, f.nullable) for f in t}  # a struct


def _table(name: str, n: int, seed: int, empty_lists: bool) -> pa.Table:
    rng = random.Random(seed)
    schema = schemas.TABLES[name]
    rows = []
    for i in range(n):
        row = {f.name: _value(rng, f.type, f.nullable) for f in schema}
        row["file_path" if name != "files" else "path"] = rng.choice(["B.lean", "A.lean", "C.lean"])
        row.update({"path": f"F{n - i}.lean"} if name == "files" else {"idx": i} if name == "tactics" else {})
        if empty_lists and name == "tactics":
            row["annotations"] = []
        rows.append(row)
    return pa.Table.from_pylist(rows, schema=schema)


@pytest.mark.parametrize("name", ["files", "theorems", "tactics", "premises"])
@pytest.mark.parametrize(("rows", "row_group"), [(5, 2), (300, 17), (64, 8)])
def test_a_table_hashed_a_chunk_at_a_time_gives_the_whole_tables_bytes(tmp_path, name, rows, row_group):
    for seed, empty_lists in ((rows, False), (rows + 1, True)):
        path = tmp_path / f"{name}-{seed}.parquet"
        pq.write_table(_table(name, rows, seed, empty_lists), path, row_group_size=row_group, compression="zstd")
        whole, chunked = _Bytes(), _Bytes()
        hash_whole(whole, pq.read_table(path).cast(schemas.TABLES[name]), _SORT_KEYS[name])
        hash_parquet(chunked, path, schemas.TABLES[name], _SORT_KEYS[name])
        assert pq.ParquetFile(path).num_row_groups > 1
        assert chunked.data == whole.data


def test_many_small_row_groups_share_a_few_hundred_chunk_files(tmp_path, monkeypatch):
    """Row groups far smaller than the table (a tiny bound): chunks grow so that at most
    `_MAX_CHUNKS` files are open at once; the bytes are the whole table's."""
    import storage.table_hash as table_hash

    monkeypatch.setattr(table_hash, "_MAX_CHUNKS", 16)
    path = tmp_path / "tactics.parquet"
    pq.write_table(_table("tactics", 400, 9, False), path, row_group_size=5, compression="zstd")
    opened = []
    real = pa.ipc.new_file
    monkeypatch.setattr(pa.ipc, "new_file", lambda *a, **k: opened.append(1) or real(*a, **k))
    whole, chunked = _Bytes(), _Bytes()
    hash_whole(whole, pq.read_table(path).cast(schemas.TACTICS), _SORT_KEYS["tactics"])
    hash_parquet(chunked, path, schemas.TACTICS, _SORT_KEYS["tactics"])
    assert 1 < len(opened) <= 16
    assert chunked.data == whole.data
