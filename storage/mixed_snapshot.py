"""A snapshot whose train split of one split kind has extra tactic rows: the traced data of a
step plus the found proofs of expert iteration (tasks/expert/data.py decides the rows).

The new snapshot shares every Parquet part of its base and adds one file,
`snapshots/<id>/extra-train-tactics.parquet` (schema SNAPSHOT_TACTICS); its id is a hash of the
base id, the split kind and the rows, so the same rows give the same snapshot (and the same
checkpoint id downstream), and new rows a new one. The manifest says what it derives from.

    python -c "help('storage.mixed_snapshot')"
"""

from __future__ import annotations

import pyarrow as pa

from . import schemas
from .snapshot_ref import SnapshotRef, with_extra_train_file

EXTRA_FILE = "extra-train-tactics.parquet"
ID_PREFIX = "mix-"  # of the snapshots built here


def with_extra_train_rows(store, base: SnapshotRef, split_kind: str, rows: pa.Table, about: dict) -> SnapshotRef:
    """`base` with `rows` (SNAPSHOT_TACTICS) added to its `split_kind`/train tactics; `about` is
    recorded in the manifest (counts, where the rows came from). Returns at once if it exists."""
    return with_extra_train_file(
        store, base, split_kind, rows.cast(schemas.SNAPSHOT_TACTICS), prefix=ID_PREFIX, file=EXTRA_FILE,
        part_key="tactics", about_key="extra_train_rows", about=about, counted=True,
    )  # fmt: skip
