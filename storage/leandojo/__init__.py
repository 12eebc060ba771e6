"""LeanDojo Benchmark exports in and out of the store (layout: docs/architecture.md,
"Rules taken from LeanDojo and LeanAgent"; formats and checks: docs/leandojo-export.md).

`read_export` turns an export folder into one `RepoData` per repository it holds (the
traced repository and dependencies such as mathlib or std, each keyed by its own url
and commit). `import_export` streams an export into the store in bounded memory
(`stream`: the same checks and the same tables, a batch at a time); `write_export` writes any set of stored
repositories back in the LeanDojo layout. Keys we do not model are kept verbatim in
`extra`, so import then export gives identical theorem records.

The package: `records` (the typed records and `TheoremKey`), `files` (reading only
regular files inside the export, with size limits), `fields` (one record's checks),
`theorems` (split files), `corpus` (files and premises), `tables`, `read` (the
pipeline), `jsonarray`, `staging` and `stream` (the streaming import), `write` (the export).
"""

from __future__ import annotations

from pathlib import Path

from ..memory import release_arrow_memory
from ..splits import SplitSettings
from .fields import check_commit, check_relative_path
from .read import read_export, read_exports
from .records import ABSENT, PREMISE_KEYS, TACTIC_KEYS, THEOREM_KEYS, TheoremKey
from .stream import DEFAULT_MEMORY_MB, staged_exports
from .write import check_export_target, export_metadata, write_export

__all__ = [
    "ABSENT",
    "PREMISE_KEYS",
    "TACTIC_KEYS",
    "THEOREM_KEYS",
    "TheoremKey",
    "check_commit",
    "check_export_target",
    "check_relative_path",
    "export_metadata",
    "import_export",
    "import_exports",
    "read_export",
    "read_exports",
    "staged_exports",
    "write_export",
]


def import_export(
    store,
    path: str | Path,
    split_settings: SplitSettings | None = None,
    replace: bool = False,
    lock_timeout: float = 0.0,
) -> list:
    """Read, validate, then write every repository of an export. Nothing is written
    unless the whole export is valid and no repository conflicts; all of them appear
    together, in one rename (`Store.add_repositories`)."""
    return import_exports(store, [path], split_settings, replace=replace, lock_timeout=lock_timeout)


def import_exports(
    store,
    paths: list[str | Path],
    split_settings: SplitSettings | None = None,
    replace: bool = False,
    lock_timeout: float = 0.0,
    workers: int | None = None,
    memory_mb: int = DEFAULT_MEMORY_MB,
) -> list:
    """Import several exports as one change (one commit): all of their repositories appear
    together, or, if any export is invalid or conflicts, none. Streamed (`stream.py`: memory
    near `memory_mb` whatever the export's size); `workers` > 1 reads the exports whole in
    parallel processes instead (`read_exports`)."""
    if workers is not None and workers > 1:
        results = store.ingest(read_exports(paths, split_settings, workers), replace=replace, lock_timeout=lock_timeout)
    else:
        with staged_exports(paths, split_settings, memory_mb) as repos:
            results = store.ingest(repos, replace=replace, lock_timeout=lock_timeout)
    release_arrow_memory()  # the tables read are garbage now (storage/memory.py)
    return results
