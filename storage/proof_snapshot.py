"""A snapshot whose train split carries extra whole proofs: the step's traced data plus the verified
whole proofs whole-proof expert iteration trains on (tasks/expert/whole_proof.py decides the rows).

The new snapshot shares every Parquet part of its base and adds one file,
`snapshots/<id>/extra-train-proofs.parquet` (schema `PROOF_ROWS`), listed under
`parts[split_kind]["train"]["proofs"]` of its manifest; its id hashes the base id, the split kind and
the rows, so the same proofs give the same snapshot (and the same checkpoint id downstream) and new
proofs a new one. `extra_proofs(snapshot, split_kind)` reads them back (none for other snapshots).

    python -c "help('storage.proof_snapshot')"
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from .snapshot_ref import SnapshotRef, with_extra_train_file

EXTRA_FILE = "extra-train-proofs.parquet"
ID_PREFIX = "mixp-"

PROOF_ROWS = pa.schema(
    [
        pa.field("kind", pa.string(), nullable=False),  # repo | statement
        pa.field("key", pa.string(), nullable=False),  # theorem id (repo) or statement id (statement set)
        pa.field("repo_id", pa.string()),  # repo: the repository; statement: the set's name
        pa.field("theorem_id", pa.string()),
        pa.field("full_name", pa.string(), nullable=False),
        pa.field("header", pa.string()),
        pa.field("statement", pa.string(), nullable=False),
        pa.field("informal", pa.string()),
        pa.field("proof", pa.string(), nullable=False),  # the tactic block after `:= by`
        pa.field("origin", pa.string(), nullable=False),  # found | whole_proof | statement_set | traced_*
    ]
)


def with_extra_train_proofs(store, base: SnapshotRef, split_kind: str, rows: list[dict], about: dict) -> SnapshotRef:
    """`base` with `rows` (PROOF_ROWS) added to its `split_kind`/train split; returns at once if it exists."""
    table = pa.Table.from_pylist([{f.name: r.get(f.name) for f in PROOF_ROWS} for r in rows], schema=PROOF_ROWS)
    return with_extra_train_file(
        store, base, split_kind, table, prefix=ID_PREFIX, file=EXTRA_FILE,
        part_key="proofs", about_key="extra_train_proofs", about=about,
    )  # fmt: skip


def extra_proofs(snapshot: SnapshotRef, split_kind: str) -> list[dict]:
    """The extra whole proofs of the snapshot's `split_kind`/train split (none for a plain snapshot)."""
    rels = snapshot.manifest().get("parts", {}).get(split_kind, {}).get("train", {}).get("proofs", [])
    out: list[dict] = []
    for rel in rels:
        out += pq.read_table(Path(snapshot.store_root) / rel).to_pylist()
    return out
