"""Bring sources into the store: import a LeanDojo export, or trace a repository.

`ingest_source` returns the repository ids the source produced, its own
repository first (an export may also hold dependencies such as std or mathlib).
`source_fingerprint` is what the Prefect cache key of an ingestion is built from.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from storage.errors import InputError
from storage.ids import stable_hash
from storage.leandojo import import_export
from storage.splits import SplitSettings


def source_fingerprint(source) -> str:
    """Changes whenever the source's content may have changed.

    An export folder: every file's relative path, size and modification time (reading
    gigabytes of JSON to hash it would cost more than importing it). A repository:
    url or path and commit; without a commit, a local repository's HEAD.
    """
    h = hashlib.sha256()
    if source.export is not None:
        root = Path(source.export)
        if not root.is_dir():
            raise InputError(root, "is not a folder", "give the path of a LeanDojo export")
        for p in sorted(root.rglob("*")):
            if p.is_file():
                st = p.stat()
                h.update(f"{p.relative_to(root)}\x1f{st.st_size}\x1f{st.st_mtime_ns}\n".encode())
    else:
        commit = source.commit
        if commit is None and Path(source.repo).is_dir():
            from .tracing.trace import parse_source, resolve_local_commit

            commit = resolve_local_commit(parse_source(source.repo), None)
        h.update(f"{source.repo}\x1f{commit}".encode())
    return h.hexdigest()[:20]


def ingest_source(store, source, split_settings: SplitSettings, home: Path, replace: bool = False,
                  lock_timeout: float = 600.0) -> dict:
    """Import or trace one source. Returns {"repo_ids": [...], "statuses": {...}}."""
    if source.export is not None:
        results = import_export(store, source.export, split_settings, replace=replace, lock_timeout=lock_timeout)
    else:
        results = trace_and_import(store, source.repo, source.commit, split_settings=split_settings,
                                   replace=replace, home=home, lock_timeout=lock_timeout)
    return {"repo_ids": [r.repo_id for r in results], "statuses": {r.repo_id: r.status for r in results},
            "counts": {r.repo_id: r.counts for r in results}}


def trace_and_import(store, url_or_path: str, commit: str | None, split_settings: SplitSettings | None = None,
                     replace: bool = False, home: Path | None = None, lock_timeout: float = 0.0):
    """Trace with lean-dojo into `<home>/traces/`, then import that export."""
    from storage.store import dojoflow_home

    from .tracing.trace import trace_repository

    home = Path(home) if home else dojoflow_home(os.environ.get("DOJOFLOW_HOME"))
    traces = home / "traces"
    name = f"{Path(url_or_path.rstrip('/')).name}-{stable_hash([url_or_path, commit], 10)}"
    export_dir = trace_repository(url_or_path, commit, out_dir=traces / "exports" / name, work_dir=traces / "work")
    return import_export(store, export_dir, split_settings, replace=replace, lock_timeout=lock_timeout)
