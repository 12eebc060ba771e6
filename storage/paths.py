"""Checks of folder paths given on the command line, made before anything is written:
a path that is (or lies under) an existing file cannot become a folder, and failing on
it after a training run or a search loses that work (`-o /etc/hostname`)."""

from __future__ import annotations

from pathlib import Path

from .errors import InputError


def check_folder_path(path: str | Path, shown: str | None = None, fix: str = "give a folder, new or existing") -> Path:
    """`path` resolved, if it can be a folder: it is one, or nothing on its way is a file.
    `shown` names the input in the error (default: the path)."""
    resolved = Path(path).expanduser().resolve()
    for p in (resolved, *resolved.parents):
        if p.exists():
            if not p.is_dir():
                problem = "is a file, not a folder" if p == resolved else f"is inside {p}, which is a file"
                raise InputError(shown if shown is not None else path, problem, fix)
            break
    return resolved
