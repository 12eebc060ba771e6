"""Atomic writes: every file and folder Dojoflow writes goes through here.

A writer writes to a temporary name in the destination's own folder and renames
it into place (`os.replace`), so a reader never sees half a file and a killed
process leaves at worst an orphan `*.tmp-*` that `remove_orphans` deletes.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

TMP_MARK = ".tmp-"


def temp_sibling(path: Path) -> Path:
    path = Path(path)
    return path.with_name(f"{path.name}{TMP_MARK}{uuid.uuid4().hex[:12]}")


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """Yield a temporary path; on success rename it to `path` (file or folder)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_sibling(path)
    try:
        yield tmp
        if path.is_dir() and tmp.is_dir():
            # os.replace cannot replace a non-empty folder: move the old one aside first.
            old = temp_sibling(path)
            os.replace(path, old)
            os.replace(tmp, path)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, path)
        _fsync_dir(path.parent)
    except BaseException:
        if tmp.is_dir():
            shutil.rmtree(tmp, ignore_errors=True)
        elif tmp.exists():
            tmp.unlink()
        raise


def write_bytes(path: Path, data: bytes) -> None:
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())


def write_text(path: Path, text: str) -> None:
    write_bytes(path, text.encode("utf-8"))


def write_json(path: Path, obj) -> None:
    write_text(path, json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def write_parquet(path: Path, table) -> None:
    import pyarrow.parquet as pq

    with atomic_path(path) as tmp:
        pq.write_table(table, tmp, compression="zstd")


def remove_orphans(root: Path, depth: int = 2) -> list[Path]:
    """Delete temp files and folders a killed writer left under `root`, down to `depth`
    levels (writers put temp names beside their targets, so deeper ones are inside a
    temp folder already, or inside a finished folder that no writer touches again)."""
    removed = []
    root = Path(root)
    if not root.exists():
        return removed
    found = [p for level in range(1, depth + 1) for p in root.glob("/".join(["*"] * (level - 1) + [f"*{TMP_MARK}*"]))]
    for p in sorted(found, key=lambda p: len(p.parts)):
        if not p.exists():
            continue
        if TMP_MARK not in p.name:
            continue
        if p.is_dir():
            shutil.rmtree(p, ignore_errors=True)
        elif p.exists():
            p.unlink()
        removed.append(p)
    return removed


def remove_tree(path: Path) -> None:
    """Delete a file or folder so that no reader sees it half-deleted: rename it to a temp
    name first (one atomic step), then delete that; a crash leaves only an orphan."""
    path = Path(path)
    if not path.exists():
        return
    trash = temp_sibling(path)
    os.replace(path, trash)
    if trash.is_dir():
        shutil.rmtree(trash, ignore_errors=True)
    else:
        trash.unlink(missing_ok=True)
