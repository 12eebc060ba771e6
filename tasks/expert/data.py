"""Found proofs as training data: the rows a round's trainer adds to the traced data.

`round_snapshot(store, snapshot, split_kind, found, ratio)` is the step's snapshot with the
found proofs' (state, tactic) pairs added to its train split (storage/mixed_snapshot.py), so the
trainer, its checkpoint id and its resume work as for any snapshot. The rules:

- Only found proofs the verifier accepted (`verdict` proved, a checker that is not `replay`),
  of theorems in the snapshot's train split. A val or test theorem, or a proof that fails the
  rule, is refused here (counted in `refused`) even if a bug upstream let it into `found`.
- Step-wise proofs give one pair per step, with the states Lean reported; a whole-proof proof
  gives a pair only when it is one tactic (a block would be cut to its first line by SFT;
  tasks/expert/pool.py:found_rows decides the steps).
- A pair already in the traced train data, or found twice, is added once at most (pairs compare
  with whitespace collapsed and the tactic's first line, as SFT trains on it).
- Mixing ratio: found pairs are repeated `max(1, round(ratio * traced / found))` times.

    python -c "help('tasks.expert.data')"
"""

from __future__ import annotations

import pyarrow as pa

from storage.found_proofs import NOT_A_VERIFIER
from storage.mixed_snapshot import with_extra_train_rows
from storage.schemas import SNAPSHOT_TACTICS
from tasks.sft.data import normalize_tactic


def _pair(state: str, tactic: str) -> tuple[str, str]:
    return " ".join(state.split()), normalize_tactic(tactic)


def training_rows(found: list[dict], traced: pa.Table, train_theorems: set[str], ratio: float) -> tuple[pa.Table, dict]:
    """(rows to add, counts): see the module doc. `train_theorems`: theorem ids of the train split."""
    seen = {_pair(s, t) for s, t in zip(traced.column("state_before").to_pylist(), traced.column("tactic").to_pylist())}
    rows, refused, duplicate, proofs = [], 0, 0, 0
    for f in found:
        if f.get("verdict") != "proved" or f.get("checker") in NOT_A_VERIFIER or f["theorem_id"] not in train_theorems:
            refused += 1
            continue
        steps = f.get("steps") or []
        proofs += bool(steps)
        for i, s in enumerate(steps):
            key = _pair(s["state_before"], s["tactic"])
            if key in seen:
                duplicate += 1
                continue
            seen.add(key)
            rows.append(
                {
                    "repo_id": f["repo_id"],
                    "theorem_id": f["theorem_id"],
                    "file_path": f["file_path"],
                    "full_name": f["full_name"],
                    "idx": i,
                    "num_tactics": len(steps),
                    "state_before": s["state_before"],
                    "tactic": s["tactic"],
                    "state_after": s["state_after"],
                    "annotated_tactic": s["tactic"],
                    "annotations": [],
                }
            )
    repeat = max(1, round(ratio * traced.num_rows / len(rows))) if rows else 0
    table = pa.Table.from_pylist(rows * repeat, schema=SNAPSHOT_TACTICS)
    counts = {"proofs": proofs, "pairs": len(rows), "repeat": repeat, "duplicate": duplicate, "refused": refused}
    return table, counts


def round_snapshot(store, snapshot, split_kind: str, found: list[dict], ratio: float) -> tuple:
    """(the round's snapshot, counts): `snapshot` plus the found proofs' pairs in its train split."""
    traced = snapshot.tactics(split_kind, "train")
    train = set(snapshot.theorems(split_kind, "train").column("theorem_id").to_pylist())
    rows, counts = training_rows(found, traced, train, ratio)
    counts["traced"] = traced.num_rows
    return with_extra_train_rows(store, snapshot, split_kind, rows, counts), counts
