"""Reading an export's files: regular files inside the export, of bounded size, as UTF-8 JSON.

An export is input anyone can write (docs/leandojo-export.md, "What an import reads"):
a file linked to /dev/zero or /dev/urandom never ends, a FIFO blocks its reader, a
link may point outside the export, and a 100,000-deep JSON document exhausts the stack.
Each is one InputError naming the file, before anything is written.
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path

from ..errors import InputError

# Size limits: far above LeanDojo Benchmark 4's largest file (about 1 GB), far below
# what a hostile file could make us allocate.
MAX_METADATA_BYTES = 16 * 2**20
MAX_DATA_BYTES = 16 * 2**30
_READ_CHUNK = 1 << 24
_DEEP_FIX = "re-create the file: LeanDojo's records are only a few levels deep"
# A \uD800-\uDFFF escape: the only way JSON text read as UTF-8 can hold a surrogate.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def shown(path) -> str:
    """`path` as text that can always be printed (bytes that are not UTF-8 as \\xNN)."""
    return str(path).encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def check_utf8_name(path: Path, fix: str) -> None:
    """Refuse a folder whose name is not UTF-8 text (its path is stored in the catalog, which holds
    text); `fix` says what to do."""
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        raise InputError(shown(path), "the folder's name is not UTF-8 text", fix) from None


def check_root(root: Path) -> Path:
    """The export folder, refused when it is missing, not a folder or not UTF-8 text
    (its path is stored in the catalog, which holds text)."""
    check_utf8_name(root, "rename the folder (or a parent) to a UTF-8 name")
    if not root.exists():
        raise InputError(root, "does not exist", "give the path of a LeanDojo export folder")
    if not root.is_dir():
        raise InputError(root, "is not a folder", "give the path of a LeanDojo export folder")
    return root


def present(path: Path) -> bool:
    """True when `path` is there, as a file or as a link (a dangling link is refused on reading)."""
    return os.path.lexists(path)


def _inside(path: Path, root: Path) -> Path:
    """`path` resolved, refused when it (or a folder on the way) is a link that leaves `root`
    or a linked folder: an export's files stay inside it."""
    real_root = root.resolve()
    for parent in reversed(path.relative_to(root).parents[:-1]):
        if (root / parent).is_symlink():
            raise InputError(
                root / parent,
                "is a symbolic link to a folder",
                "copy the folder into the export: an export's folders are real folders inside it",
            )
    try:
        real = path.resolve()
    except (RuntimeError, OSError):  # Python 3.11 raises RuntimeError on a loop, 3.13 OSError
        raise InputError(
            path,
            "is a symbolic link that never reaches a file (a loop of links)",
            "replace the link with the file it should name",
        ) from None
    if real != real_root and real_root not in real.parents:
        raise InputError(
            path,
            f"is a symbolic link to {shown(real)}, outside the export",
            "copy the file into the export folder: an export's files stay inside it",
        )
    return real


def read_bytes(path: Path, root: Path, limit: int = MAX_DATA_BYTES) -> bytes:
    """A regular file's bytes, at most `limit` of them, or an InputError naming it."""
    fd = open_checked(path, root, limit)
    try:
        return _read_at_most(fd, path, limit)
    finally:
        os.close(fd)


def open_checked(path: Path, root: Path, limit: int = MAX_DATA_BYTES) -> int:
    """A file descriptor on a regular file inside the export of at most `limit` bytes, or an
    InputError naming it. Opened without blocking (a FIFO opens at once and is then refused)
    and checked with fstat, so the file that is read is the file that was checked."""
    real = _inside(path, root)
    try:
        fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError as e:
        raise InputError(path, f"cannot be read ({e.strerror or e})", "check that it is a readable file") from e
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InputError(
                path,
                f"is not a regular file (a {_kind(st.st_mode)})",
                "an export's files must be regular files: copy the data into the export",
            )
        if st.st_size > limit:
            raise _too_big(path, st.st_size, limit)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_chunks(path: Path, root: Path, chunk: int, limit: int = MAX_DATA_BYTES):
    """A regular file's bytes in pieces of `chunk` bytes (the checks of `read_bytes`, the
    limit checked on the bytes read too)."""
    fd = open_checked(path, root, limit)
    try:
        total = 0
        while piece := os.read(fd, chunk):
            total += len(piece)
            if total > limit:
                raise _too_big(path, total, limit)
            yield piece
    finally:
        os.close(fd)


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "FIFO"), (stat.S_ISCHR, "device"), (stat.S_ISBLK, "device")):
        if test(mode):
            return name
    return "socket" if stat.S_ISSOCK(mode) else "folder" if stat.S_ISDIR(mode) else "special file"


def _read_at_most(fd: int, path: Path, limit: int) -> bytes:
    """The file's bytes; an InputError when it holds more than `limit` (checked on the bytes
    read, not only on the size fstat gave: a file may grow while it is read)."""
    size = os.fstat(fd).st_size
    if size > limit:
        raise _too_big(path, size, limit)
    chunks, total = [], 0
    while True:
        chunk = os.read(fd, _READ_CHUNK)
        if not chunk:
            return b"".join(chunks)
        total += len(chunk)
        if total > limit:
            raise _too_big(path, total, limit)
        chunks.append(chunk)


def _too_big(path: Path, size: int, limit: int) -> InputError:
    return InputError(
        path,
        f"holds {size} bytes or more, above the limit of {limit} for this file",
        "check that it is the file LeanDojo wrote (a LeanDojo export's files are far smaller)",
    )


def read_text(path: Path, data: bytes) -> str:
    """`data` (read from `path`) as UTF-8 text, or an InputError naming the line."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise InputError(
            path,
            f"is not UTF-8 text (byte {e.start}: {e.reason})",
            "re-create the export: LeanDojo writes UTF-8",
            where=f"line {line}",
        ) from e


def load_json(path: Path, data: bytes):
    """One JSON document (from `path`'s bytes `data`), every string checked to be text."""
    text = read_text(path, data)
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(
            path,
            f"malformed JSON at line {e.lineno}, column {e.colno}: {e.msg}",
            "fix or re-create the file (it must be one JSON document)",
        ) from e
    except RecursionError as e:
        raise InputError(path, "JSON nested too deeply to read", _DEEP_FIX) from e
    if _SURROGATE_ESCAPE.search(text):
        if isinstance(value, list):
            for i, rec in enumerate(value):
                check_unicode(rec, path, f"record {i}")
        else:
            check_unicode(value, path, None)
    return value


def load_jsonl(path: Path, data: bytes) -> list:
    """The records of a JSON-lines file (blank lines skipped)."""
    out = []
    for lineno, line in enumerate(read_text(path, data).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError as e:
            raise InputError(
                path,
                f"malformed JSON: {e.msg}",
                "fix or re-create the file (one JSON object per line)",
                where=f"line {lineno}",
            ) from e
        except RecursionError as e:
            raise InputError(path, "JSON nested too deeply to read", _DEEP_FIX, where=f"line {lineno}") from e
        if _SURROGATE_ESCAPE.search(line):
            check_unicode(out[-1], path, f"line {lineno}")
    return out


def check_unicode(value, source, where: str | None) -> None:
    """InputError naming the first string (or key) in `value` that holds a lone
    surrogate: it is not Unicode text, and could not be stored or written as UTF-8."""
    stack = [(value, "")]
    while stack:
        v, field = stack.pop()
        if isinstance(v, str):
            try:
                v.encode("utf-8")
            except UnicodeEncodeError as e:
                bad = v[e.start].encode("utf-8", "backslashreplace").decode()
                raise InputError(
                    source,
                    f"field `{field or 'value'}` holds a lone surrogate ({bad}), which is not text",
                    "re-create the export (LeanDojo writes valid UTF-8), or remove the escape",
                    where=where,
                ) from None
        elif isinstance(v, dict):
            for k, x in v.items():
                stack.append((k, field or "key"))
                stack.append((x, f"{field}.{k}" if field else k))
        elif isinstance(v, list):
            stack.extend((x, f"{field}[{i}]") for i, x in enumerate(v))
