"""A JSON array read in pieces: the records of a split file, a batch at a time.

LeanDojo's split files are one JSON array of theorem records (LeanDojo Benchmark 4's
random/train.json is about a gigabyte). The streaming import (storage/leandojo/stream.py)
decodes them a batch of records at a time: this module cuts the array into batches of
whole records, each a small JSON array of its own, without parsing the records into
Python objects. A record's end is found by msgspec in C (decoding it as `Raw` and reading
where the trailing characters start), so the cost is one skim of the bytes.

Anything that is not `[record, record, ...]` as a whole (a truncated file, text after the
closing bracket, an empty file) raises `NotStreamable`: the caller reads the file the old
way, whose checks name what is wrong.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import msgspec

from .files import MAX_DATA_BYTES, read_chunks

_TRAILING = re.compile(r"trailing characters \(byte (\d+)\)")
_WHITESPACE = frozenset(b" \t\r\n")
_RAW = msgspec.json.Decoder(msgspec.Raw)


class NotStreamable(Exception):
    """The file is not a JSON array this reader cuts; read it whole (its checks name why)."""


class _Buffer:
    """The unread bytes of a file, filled a piece at a time."""

    def __init__(self, pieces: Iterator[bytes]):
        self.data = bytearray()
        self.pieces = pieces
        self.eof = False

    def more(self) -> bool:
        piece = next(self.pieces, None)
        if piece is None:
            self.eof = True
            return False
        self.data += piece
        return True

    def skip_space(self, pos: int) -> int:
        """The position of the next byte that is not whitespace (reading more as needed);
        NotStreamable at the end of the file."""
        while True:
            data = self.data
            while pos < len(data) and data[pos] in _WHITESPACE:
                pos += 1
            if pos < len(data):
                return pos
            if not self.more():
                raise NotStreamable("the file ends early")

    def value_end(self, pos: int) -> int:
        """Where the JSON value starting at `pos` ends (reading more until it is whole)."""
        while True:
            end = self._try_value_end(pos)
            if end is not None:
                return end
            if not self.more():
                raise NotStreamable("the file ends inside a value")

    def _try_value_end(self, pos: int) -> int | None:
        view = memoryview(self.data)
        part = view[pos:]
        try:
            _RAW.decode(part)
            return None  # the value runs to the end of what was read: there must be more
        except msgspec.DecodeError as e:
            m = _TRAILING.search(str(e))
            return pos + int(m.group(1)) - 1 if m else None  # msgspec names the byte after the first trailing one
        except RecursionError:
            raise NotStreamable("nested too deeply") from None
        finally:
            part.release()
            view.release()


# Where one theorem record ends and the next begins, as LeanDojo (and Dojoflow) write them: a
# record's first key is "url". A raw `"` cannot be inside a JSON string, so this never matches
# inside one; a match elsewhere (a nested object whose first key is "url") cuts a record in
# two, and the halves fail to decode: the file is then read whole, by the checks that name why.
_NEXT_RECORD = re.compile(rb'\}\s*,\s*(?=\{\s*"url"\s*:)')


def array_batches(path: Path, root: Path, batch_bytes: int, limit: int = MAX_DATA_BYTES) -> Iterator[bytes]:
    """JSON arrays of consecutive records of the array in `path`, each about `batch_bytes`
    long (at least one record), in order. Checks of the file: `files.read_chunks`.

    A batch ends at the first record boundary (`_NEXT_RECORD`) after `batch_bytes`; where the
    records are laid out otherwise, each record's end is found by msgspec (`_cut_by_record`)."""
    buf = _Buffer(read_chunks(path, root, max(1 << 20, min(batch_bytes, 1 << 24)), limit))
    pos = buf.skip_space(0)
    if buf.data[pos] != ord("["):
        raise NotStreamable("not a JSON array")
    pos = buf.skip_space(pos + 1)
    while True:
        while len(buf.data) < pos + 2 * batch_bytes and buf.more():
            pass
        m = _NEXT_RECORD.search(buf.data, pos + batch_bytes)
        if m is None and not buf.eof:
            yield from _cut_by_record(buf, pos, batch_bytes)
            return
        if m is None:  # the last batch: up to the closing bracket
            body = bytes(buf.data[pos:]).rstrip()
            if not body.endswith(b"]"):
                raise NotStreamable("the array does not end with ]")
            yield b"[" + body[:-1] + b"]"
            return
        yield b"[" + bytes(buf.data[pos : m.start() + 1]) + b"]"
        del buf.data[: m.end()]  # what was read is dropped: memory stays at a batch or two
        pos = 0


def _cut_by_record(buf: _Buffer, pos: int, batch_bytes: int) -> Iterator[bytes]:
    """The batches from `pos` on, each record's end found by msgspec (any layout)."""
    start = pos
    if buf.data[pos] == ord("]"):
        _only_space_after(buf, pos + 1)
        return
    while True:
        end = buf.value_end(pos)
        pos = buf.skip_space(end)
        sep = buf.data[pos]
        if sep == ord("]"):
            yield b"[" + bytes(buf.data[start:end]) + b"]"
            _only_space_after(buf, pos + 1)
            return
        if sep != ord(","):
            raise NotStreamable("records are not separated by commas")
        if end - start >= batch_bytes:
            yield b"[" + bytes(buf.data[start:end]) + b"]"
            del buf.data[: pos + 1]  # what was read is dropped: memory stays at a batch
            pos = start = buf.skip_space(0)
        else:
            pos = buf.skip_space(pos + 1)


def _only_space_after(buf: _Buffer, pos: int) -> None:
    while True:
        if any(b not in _WHITESPACE for b in buf.data[pos:]):
            raise NotStreamable("text after the array")
        pos = len(buf.data)
        if not buf.more():
            return
