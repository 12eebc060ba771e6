"""A snapshot whose train split of one split kind has extra tactic rows: the traced data of a
step plus the found proofs of expert iteration (tasks/expert/data.py decides the rows).

The new snapshot shares every Parquet part of its base and adds one file,
`snapshots/<id>/extra-train-tactics.parquet` (schema SNAPSHOT_TACTICS); its id is a hash of the
base id, the split kind and the rows, so the same rows give the same snapshot (and the same
checkpoint id downstream), and new rows a new one. The manifest says what it derives from.

    python -c "help('storage.mixed_snapshot')"
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa

from . import atomic, schemas
from .ids import stable_hash
from .snapshot_ref import SnapshotRef

EXTRA_FILE = "extra-train-tactics.parquet"
ID_PREFIX = "mix-"  # of the snapshots built here


def with_extra_train_rows(store, base: SnapshotRef, split_kind: str, rows: pa.Table, about: dict) -> SnapshotRef:
    """`base` with `rows` (SNAPSHOT_TACTICS) added to its `split_kind`/train tactics; `about` is
    recorded in the manifest (counts, where the rows came from). Returns at once if it exists."""
    rows = rows.cast(schemas.SNAPSHOT_TACTICS)
    sid = ID_PREFIX + stable_hash([base.snapshot_id, split_kind, rows.to_pylist()], 20)
    folder = Path(store.root) / "snapshots" / sid
    manifest_path = folder / "manifest.json"
    if not manifest_path.exists():
        manifest = base.manifest()
        rel = f"snapshots/{sid}/{EXTRA_FILE}"
        atomic.write_parquet(Path(store.root) / rel, rows)
        part = manifest["parts"][split_kind]["train"]
        part["tactics"] = [*part["tactics"], rel]
        manifest["counts"][split_kind]["train"]["tactics"] += rows.num_rows
        manifest.update(
            snapshot_id=sid,
            derived_from=base.snapshot_id,
            extra_train_rows={"split_kind": split_kind, "rows": rows.num_rows, **about},
            created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        )
        atomic.write_json(manifest_path, manifest)
    manifest = json.loads(manifest_path.read_text())
    return SnapshotRef(
        snapshot_id=sid,
        store_root=str(store.root),
        repo_ids=tuple(manifest["repo_ids"]),
        manifest_path=str(manifest_path),
        counts=manifest["counts"],
    )
