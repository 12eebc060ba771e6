"""What `sft_proof` trains on at a curriculum step beyond the snapshot's traced proofs: its trainer
declaration's `data` function (tasks/trainers/base.py), run by the curriculum before training.

The verified proofs of the sets named in `statement_sets` (storage/statement_sets `verified_proofs`:
a verdict's, never a claimed proof, never a benchmark or held-out statement) join the step's snapshot
as a proof snapshot (storage/proof_snapshot.py) whose id hashes them: the checkpoint id follows the
data. Proofs whole-proof expert iteration found (origin `expert_iteration`) are left to its rounds,
which train on them from the step's checkpoint, so a rerun of a step whose rounds found proofs trains
(and is cached) as before. With nothing to add the step's snapshot is returned as it is.
"""

from __future__ import annotations

from storage.snapshot_ref import SnapshotRef

from .config import SFTProofSettings
from .traced import tactic_block


def set_proof_rows(store, sets: list[str]) -> list[dict]:
    """Proof rows (storage/proof_snapshot.py) of the sets' verified proofs, not expert iteration's."""
    from storage.statement_sets import verified_proofs

    rows = []
    for p in verified_proofs(store, sets):
        proof = tactic_block(p["proof"])
        if proof and p.get("origin") != "expert_iteration":
            rows.append({"kind": "statement", "key": p["statement_id"], "repo_id": p["set"], "theorem_id": None,
                         "full_name": p["name"], "header": p["header"], "statement": p["statement"],
                         "informal": p["informal"], "proof": proof, "origin": "statement_set"})  # fmt: skip
    unique = {(r["key"], " ".join(r["proof"].split())): r for r in rows}
    return [unique[k] for k in sorted(unique)]


def step_snapshot(store, settings, snapshot: SnapshotRef, split_kind: str) -> SnapshotRef:
    from storage.proof_snapshot import with_extra_train_proofs
    from tasks.trainers.lifecycle import coerce_settings

    settings = coerce_settings(settings, SFTProofSettings)
    rows = set_proof_rows(store, list(settings.statement_sets)) if settings.statement_sets else []
    if not rows:
        return snapshot
    about = {"by_origin": {"statement_set": len(rows)}, "sets": sorted(settings.statement_sets)}
    return with_extra_train_proofs(store, snapshot, split_kind, rows, about)
