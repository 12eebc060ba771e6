"""A stored table's part of a repository's content hash, a part at a time (issue 24).

`repo_data.content_hash` hashes each table sorted by its key and written as one Arrow IPC
stream of one record batch: the schema message, the batch's metadata (its length, each
field's length and null count, each buffer's offset and size), then the body, every
buffer of the whole column in turn, padded to 8 bytes. Held whole, that is the table twice
(read, then sorted). Here the same bytes reach the hash while only a part of the table is
held:

- the sort: the key columns alone are read and sorted (the same stable `sort_indices` as
  `Table.sort_by`); each row's rank sends it to one of a few chunk files (Arrow IPC on disk,
  each about a row group of the source) and a chunk is put in order when it is read back;
- the body: each column's buffers are rebuilt chunk by chunk (validity bits and offsets
  joined, values concatenated, as `concat` then the IPC writer would), spooled to disk and
  fed to the hash in the writer's order;
- the metadata: Arrow writes it for a one-row batch of the same schema, and its numbers are
  replaced by the whole table's (flatbuffer structs and non-default scalars keep their place
  whatever their value). A test compares every table kind with the whole-table hash.

A file of one row group (every table that fitted the import's bound) is read whole, as before.
"""

from __future__ import annotations

import io
import struct
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .memory import release_arrow_memory

_EOS = b"\xff\xff\xff\xff\x00\x00\x00\x00"
_MAX_CHUNKS = 256  # chunk files open at once, at most
_SPOOL = 1 << 16  # a buffer up to this size stays in memory (a table has dozens)


def write_ipc(h, table: pa.Table) -> None:
    """`table` as one Arrow IPC stream into the hash `h` (as it is written: no buffer the table's size)."""
    with pa.PythonFile(_HashSink(h), mode="w") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)


def hash_whole(h, table: pa.Table, keys: list[str]) -> None:
    table = table.sort_by([(k, "ascending") for k in keys]).combine_chunks()
    write_ipc(h, table)


def hash_parquet(h, path: Path, schema: pa.Schema, keys: list[str]) -> None:
    """Into `h`, the bytes `hash_whole` gives for the Parquet table at `path` cast to `schema`."""
    pf = pq.ParquetFile(path)
    n = pf.metadata.num_rows
    if pf.num_row_groups <= 1 or n == 0:
        hash_whole(h, pq.read_table(path).cast(schema), keys)
        return
    with tempfile.TemporaryDirectory(prefix="dojoflow-hash-", dir=Path(path).parent) as tmp:
        chunks = _scatter(pf, schema, keys, Path(tmp))
        nodes: list[list[int]] = []
        columns = []
        for ci, field in enumerate(schema):
            col = _Node(field.type, Path(tmp))
            for file, order in chunks:
                with pa.memory_map(str(file)) as src:
                    reader = pa.ipc.open_file(src)
                    piece = pa.concat_arrays([reader.get_batch(b).column(ci) for b in range(reader.num_record_batches)])
                    del reader
                col.add(piece.take(order))
                del piece
            columns.append(col.finish(nodes))
        _hash_message(h, pf, schema, n, nodes, [b for c in columns for b in c])
    release_arrow_memory()  # the pieces' pages, freed (storage/memory.py)


def _scatter(pf: pq.ParquetFile, schema: pa.Schema, keys: list[str], tmp: Path) -> list:
    """The table's rows in chunk files by sorted position: [(file, the order of its rows)]."""
    n = pf.metadata.num_rows
    order = pc.sort_indices(pf.read(columns=keys), sort_keys=[(k, "ascending") for k in keys]).to_numpy()
    rank = np.empty(n, np.int64)
    rank[order] = np.arange(n, dtype=np.int64)
    del order
    meta = pf.metadata
    largest = max(meta.row_group(i).num_rows for i in range(pf.num_row_groups))
    per = max(8, largest, -(-n // _MAX_CHUNKS))  # rows per chunk: about a row group
    files = [tmp / f"chunk-{k}.arrow" for k in range(-(-n // per))]
    writers: dict[int, pa.ipc.RecordBatchFileWriter] = {}
    ranks: list[list[np.ndarray]] = [[] for _ in files]
    start = 0
    for i in range(pf.num_row_groups):
        table = pf.read_row_group(i).cast(schema)
        r = rank[start : start + table.num_rows]
        start += table.num_rows
        chunk = r // per
        by = np.argsort(chunk, kind="stable")
        for idx in np.split(by, np.flatnonzero(np.diff(chunk[by])) + 1):
            k = int(chunk[idx[0]])
            if k not in writers:
                writers[k] = pa.ipc.new_file(str(files[k]), schema)
            writers[k].write_table(table.take(idx))
            ranks[k].append(r[idx])
        del table
    for w in writers.values():
        w.close()
    return [(files[k], np.argsort(np.concatenate(ranks[k]))) for k in range(len(files))]


class _Node:
    """One field of the column being rebuilt: its length and null count, and its buffers as
    the IPC writer lays them out (validity, then offsets and values), children after."""

    def __init__(self, type_: pa.DataType, tmp: Path):
        self.type, self.tmp = type_, tmp
        self.length = self.nulls = 0
        self.valid: list = []  # per piece: its validity as bools, or its length when all valid
        self.bits: list = []  # boolean values, as bools
        self.offset_base = 0
        self.offsets = io.BytesIO() if _has_offsets(type_) else None
        if self.offsets is not None:
            self.offsets.write(bytes(4))  # the first offset, 0
        self.values = tempfile.SpooledTemporaryFile(_SPOOL, dir=tmp) if _has_values(type_) else None
        if pa.types.is_struct(type_):
            self.children = [_Node(type_.field(i).type, tmp) for i in range(type_.num_fields)]
        elif pa.types.is_list(type_):
            self.children = [_Node(type_.value_type, tmp)]
        else:
            self.children = []

    def add(self, arr: pa.Array) -> None:
        n, off, bufs = len(arr), arr.offset, arr.buffers()
        self.length += n
        nulls = arr.null_count
        self.nulls += nulls
        self.valid.append(_bools(bufs[0], off, n) if nulls else n)
        t = self.type
        if pa.types.is_boolean(t):
            self.bits.append(_bools(bufs[1], off, n))
        elif pa.types.is_string(t) or pa.types.is_list(t):
            o = np.frombuffer(bufs[1], np.int32)[off : off + n + 1]
            self.offsets.write((o[1:] - o[0] + self.offset_base).astype(np.int32).tobytes())
            self.offset_base += int(o[-1] - o[0])
            if pa.types.is_string(t):
                self.values.write(memoryview(bufs[2])[o[0] : o[-1]])
            else:
                self.children[0].add(arr.values.slice(int(o[0]), int(o[-1] - o[0])))
        elif pa.types.is_struct(t):
            for i, child in enumerate(self.children):
                child.add(arr.field(i))
        else:  # fixed width
            width = t.bit_width // 8
            self.values.write(memoryview(bufs[1])[off * width : (off + n) * width])

    def finish(self, nodes: list) -> list:
        """Append this field's (length, null count) and its children's to `nodes`; its buffers
        and its children's, in the writer's order."""
        nodes.append([self.length, self.nulls])
        out = [
            _bytes(
                np.packbits(
                    np.concatenate([np.ones(v, bool) if isinstance(v, int) else v for v in self.valid]),
                    bitorder="little",
                )
            )
            if self.nulls
            else _bytes(b"")
        ]
        if self.offsets is not None:
            self.offsets.seek(0)
            out.append(self.offsets)
        if pa.types.is_boolean(self.type):
            out.append(
                _bytes(np.packbits(np.concatenate(self.bits) if self.bits else np.zeros(0, bool), bitorder="little"))
            )
        elif self.values is not None:
            self.values.seek(0)
            out.append(self.values)
        for child in self.children:
            out += child.finish(nodes)
        return out


def _has_offsets(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_list(t)


def _has_values(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_timestamp(t)


def _bools(buf: pa.Buffer | None, off: int, n: int) -> np.ndarray:
    if buf is None:
        return np.ones(n, bool)
    return np.unpackbits(np.frombuffer(buf, np.uint8), bitorder="little", count=off + n)[off:].astype(bool)


def _bytes(data) -> io.BytesIO:
    return io.BytesIO(bytes(data))


def _size(f) -> int:
    f.seek(0, io.SEEK_END)
    size = f.tell()
    f.seek(0)
    return size


def _hash_message(h, pf: pq.ParquetFile, schema: pa.Schema, n: int, nodes: list, buffers: list) -> None:
    """The stream's bytes into `h`: schema message, the batch's patched metadata, body, end."""
    head, meta = _template(pf, schema)
    sizes = [_size(b) for b in buffers]
    spans, at = [], 0
    for s in sizes:
        spans.append([at, s])
        at += -(-s // 8) * 8
    h.update(head)
    h.update(_patched(meta, n, nodes, spans, at))
    for f, s in zip(buffers, sizes):
        while block := f.read(1 << 20):
            h.update(block)
        h.update(b"\x00" * (-s % 8))
        f.close()
    h.update(_EOS)


def _template(pf: pq.ParquetFile, schema: pa.Schema) -> tuple[bytes, bytearray]:
    """(the schema message, the metadata message of a one-row batch) as the stream writer writes them."""
    one = pf.read_row_group(0).slice(0, 1).cast(schema).combine_chunks()
    out = io.BytesIO()
    out.update = out.write  # a "hash" that keeps the bytes
    write_ipc(out, one)
    data = out.getvalue()
    (length,) = struct.unpack_from("<i", data, 4)
    head = data[: 8 + length]
    (meta_len,) = struct.unpack_from("<i", data, len(head) + 4)
    return head, bytearray(data[len(head) : len(head) + 8 + meta_len])


def _patched(meta: bytearray, n: int, nodes: list, spans: list, body: int) -> bytes:
    base = 8  # after the continuation marker and the length
    message = base + _u32(meta, base)
    struct.pack_into("<q", meta, _field(meta, message, 3), body)  # Message.bodyLength
    slot = _field(meta, message, 2)
    batch = slot + _u32(meta, slot)
    struct.pack_into("<q", meta, _field(meta, batch, 0), n)  # RecordBatch.length
    for i, values in ((1, nodes), (2, spans)):  # RecordBatch.nodes, RecordBatch.buffers
        slot = _field(meta, batch, i)
        vec = slot + _u32(meta, slot)
        if _u32(meta, vec) != len(values):
            raise AssertionError(f"the IPC template has {_u32(meta, vec)} entries where {len(values)} were rebuilt")
        for k, (a, b) in enumerate(values):
            struct.pack_into("<qq", meta, vec + 4 + 16 * k, a, b)
    return bytes(meta)


def _u32(buf, pos: int) -> int:
    return struct.unpack_from("<I", buf, pos)[0]


def _field(buf, table: int, i: int) -> int:
    """The position of field `i` of the flatbuffer table at `table` (it must be present)."""
    vtable = table - struct.unpack_from("<i", buf, table)[0]
    size = struct.unpack_from("<H", buf, vtable)[0]
    offset = struct.unpack_from("<H", buf, vtable + 4 + 2 * i)[0] if 4 + 2 * i < size else 0
    if not offset:
        raise AssertionError(f"field {i} absent from the IPC template")
    return table + offset


class _HashSink:
    """A file that hashes what is written to it."""

    def __init__(self, h):
        self.h = h
        self.closed = False

    def write(self, data) -> int:
        self.h.update(data)
        return len(data)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True
