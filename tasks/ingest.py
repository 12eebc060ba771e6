"""Bring sources into the store: import a LeanDojo export, or trace a repository.

`ingest_source` returns the repository ids the source produced, its own
repository first (an export may also hold dependencies such as std or mathlib).
`source_fingerprint` is what the Prefect cache key of an ingestion is built from.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from storage.errors import InputError
from storage.ids import stable_hash
from storage.leandojo import import_export
from storage.splits import SplitSettings


def pin_source(source):
    """The source with its commit resolved, so that what it names cannot move under a cache
    key: a local repository's commit (HEAD by default), or a remote's default branch head
    read with `git ls-remote` (no clone). A remote with a commit needs no network here, so
    a cached ingest of it runs offline. Exports and samples are returned as they are."""
    if source.repo is None:
        return source
    from .tracing.checkout import check_commit_format, parse_source, resolve_local_commit, resolve_remote_head

    parsed = parse_source(source.repo)
    if parsed.kind == "local":
        commit = resolve_local_commit(parsed, source.commit)
    else:
        commit = check_commit_format(source.commit) or resolve_remote_head(parsed)
    return source.model_copy(update={"commit": commit})


def source_fingerprint(source) -> str:
    """Changes whenever the source's content may have changed.

    An export folder: every file's relative path, size and modification time (reading
    gigabytes of JSON to hash it would cost more than importing it; the same proxy as
    make and rsync). A repository: url or path and its pinned commit (`pin_source`).
    """
    h = hashlib.sha256()
    if source.export_path is not None:
        root = Path(source.export_path)
        if not root.is_dir():
            raise InputError(root, "is not a folder", "give the path of a LeanDojo export")
        for p in sorted(root.rglob("*")):
            if p.is_file():
                st = p.stat()
                h.update(f"{p.relative_to(root)}\x1f{st.st_size}\x1f{st.st_mtime_ns}\n".encode())
    else:
        if source.commit is None:
            raise InputError(source.repo, "has no pinned commit", "pin it first (tasks.ingest.pin_source)")
        h.update(f"{source.repo}\x1f{source.commit}".encode())
    return h.hexdigest()[:20]


class Ingested(BaseModel):
    """What one source's import or trace produced (the ingest task's cached result)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    repo_ids: list[str] = Field(description="The repositories it produced, its own first (its dependencies after).")
    statuses: dict[str, str] = Field(description="Per repository: added, unchanged or replaced.")
    counts: dict[str, dict[str, int]] = Field(description="Per repository: rows per table.")

    @classmethod
    def of(cls, value: Ingested | dict) -> Ingested:
        """`value` as a model: itself, or the dict a cached ingest result of an earlier version holds."""
        return value if isinstance(value, cls) else cls.model_validate(value)


def ingest_source(
    store,
    source,
    split_settings: SplitSettings,
    home: Path,
    tracing=None,
    replace: bool = False,
    lock_timeout: float = 600.0,
) -> Ingested:
    """Import or trace one source (`tracing`: a TracingConfig for `repo` sources)."""
    if source.export_path is not None:
        results = import_export(store, source.export_path, split_settings, replace=replace, lock_timeout=lock_timeout)
    else:
        results = trace_and_import(
            store,
            source.repo,
            source.commit,
            split_settings=split_settings,
            replace=replace,
            home=home,
            lock_timeout=lock_timeout,
            trace_options=tracing.model_dump() if tracing is not None else {},
        )
    return Ingested(
        repo_ids=[r.repo_id for r in results],
        statuses={r.repo_id: r.status for r in results},
        counts={r.repo_id: r.counts for r in results},
    )


def trace_and_import(
    store,
    url_or_path: str,
    commit: str | None,
    split_settings: SplitSettings | None = None,
    replace: bool = False,
    home: Path | None = None,
    lock_timeout: float = 0.0,
    trace_options: dict | None = None,
):
    """Trace with lean-dojo into `<home>/traces/`, then import that export. `trace_options`:
    keyword arguments of trace_repository (num_procs, timeout_s, build_deps, extra_pythonpath).
    `store` may be a function that opens it, called once the trace succeeded: a trace refused
    (no Lean, a bad path) then leaves no store behind."""
    from storage.store import dojoflow_home

    from .tracing.trace import trace_repository

    home = dojoflow_home(home or None)
    traces = home / "traces"
    name = f"{Path(url_or_path.rstrip('/')).name}-{stable_hash([url_or_path, commit], 10)}"
    export_dir = trace_repository(
        url_or_path, commit, out_dir=traces / "exports" / name, work_dir=traces / "work", **(trace_options or {})
    )
    store = store() if callable(store) else store
    return import_export(store, export_dir, split_settings, replace=replace, lock_timeout=lock_timeout)
