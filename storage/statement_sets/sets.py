"""Statement sets in the store: how a set is written, listed and read (docs/statement-sets.md).

Layout under `<store>/`:

    STATEMENT_SETS.json                 the commit record: {"generation", "sets": {name: "statements/<folder>"}}
    statements/<name>@<hash12>/         one folder per set and content:
        set.json                        name, content_hash, lean/mathlib version, benchmark, publish_proofs, ...
        statements.parquet              schemas.STATEMENTS

A set is `(name, content hash)`: importing the same content again changes nothing, other content
under a stored name is refused unless replaced. A set is visible when STATEMENT_SETS.json lists
it (one rename, as REPOSITORIES.json for repositories); a folder a killed import staged is unlisted
and removed by the next writer. Call the writers inside `with store.writer():`.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from .. import atomic, catalog, schemas
from ..errors import InputError, StoreError

INDEX_FILE = "STATEMENT_SETS.json"
FOLDER = "statements"


def _index_path(store) -> Path:
    return store.root / INDEX_FILE


def read_index(store) -> dict:
    path = _index_path(store)
    if not path.exists():
        return {"generation": 0, "sets": {}}
    try:
        index = json.loads(path.read_text())
        index["sets"]  # noqa: B018  (checks the shape)
        return index
    except (ValueError, KeyError, TypeError) as e:
        raise StoreError(f"{path} is unreadable ({e}): restore it, or move it aside and import the sets again") from e


def set_folders(store) -> dict[str, Path]:
    """{set name: its folder} of every visible set."""
    return {n: store.root / f for n, f in sorted(read_index(store)["sets"].items())}


def list_sets(store) -> list[dict]:
    """Every visible set's set.json, by name."""
    return [json.loads((f / "set.json").read_text()) for f in set_folders(store).values()]


def set_meta(store, name: str) -> dict:
    folder = set_folders(store).get(name)
    if folder is None:
        raise InputError(
            name, "no such statement set in the store", 'run `dojoflow sql "SELECT * FROM statement_sets"`'
        )
    return json.loads((folder / "set.json").read_text())


def remove_unlisted(store) -> None:
    """Delete set folders no commit lists (staged by a killed import, or replaced). Writer lock held."""
    root = store.root / FOLDER
    if not root.exists():
        return
    atomic.remove_orphans(root, depth=1)
    listed = set(set_folders(store).values())
    for p in root.iterdir():
        if p.is_dir() and atomic.TMP_MARK not in p.name and p not in listed:
            atomic.remove_tree(p)


def add_set(store, meta: dict, table: pa.Table, replace: bool = False) -> str:
    """Write one set whole and list it; "added", "unchanged" or "replaced". Inside `store.writer()`."""
    remove_unlisted(store)
    index = read_index(store)
    listed = dict(index["sets"])
    name, content_hash = meta["name"], meta["content_hash"]
    status = "added"
    if name in listed:
        old = json.loads((store.root / listed[name] / "set.json").read_text())
        if old["content_hash"] == content_hash and _same_settings(old, {**META_DEFAULTS, **meta}):
            return "unchanged"
        if not replace:
            raise InputError(
                name,
                f"a statement set of this name is stored with other content or settings ({old['content_hash'][:12]} "
                f"stored, {content_hash[:12]} new)",
                "pass --replace to replace it, or give the new set another --name",
            )
        status = "replaced"
    folder = store.root / FOLDER / f"{name}@{content_hash[:12]}"
    meta = {
        **META_DEFAULTS,
        **meta,
        "ingested_at": datetime.now(UTC).replace(microsecond=0).isoformat(),
        "rows": table.num_rows,
    }
    with atomic.atomic_path(folder) as tmp:
        tmp.mkdir(parents=True)
        pq.write_table(table.cast(schemas.STATEMENTS), tmp / "statements.parquet", compression="zstd")
        (tmp / "set.json").write_text(json.dumps(meta, indent=2, sort_keys=True, ensure_ascii=False))
    old_folder = store.root / listed[name] if name in listed else None
    listed[name] = str(folder.relative_to(store.root))
    atomic.write_json(_index_path(store), {"generation": int(index.get("generation", 0)) + 1, "sets": listed})
    catalog.refresh_views(store)
    if old_folder is not None and old_folder != folder:
        atomic.remove_tree(old_folder)
    return status


META_DEFAULTS = {
    "lean_version": None,
    "mathlib_version": None,
    "benchmark": False,
    "publish_proofs": True,
    "source_path": None,
    "preset": None,
}
_SETTINGS = ("lean_version", "mathlib_version", "benchmark", "publish_proofs")


def _same_settings(old: dict, new: dict) -> bool:
    return all(old.get(k) == new.get(k) for k in _SETTINGS)


def read_statements(store, sets: list[str] | None = None, columns: list[str] | None = None) -> pa.Table:
    """The rows of `sets` (all when None) as one Arrow table (schemas.STATEMENTS)."""
    folders = set_folders(store)
    names = list(folders) if sets is None else list(sets)
    missing = [n for n in names if n not in folders]
    if missing:
        raise InputError(", ".join(missing), "no such statement set in the store", "import it first")
    parts = [pq.read_table(folders[n] / "statements.parquet", columns=columns) for n in names]
    if not parts:
        empty = schemas.STATEMENTS.empty_table()
        return empty if columns is None else empty.select(columns)
    return pa.concat_tables(parts)
