"""One expert-iteration round's bookkeeping: what it searched, what it found, what it trains on,
and its metrics (the catalog's `metrics` table, trainer `expert_iteration`).

A round (step s, round r) searches the train theorems without a found proof from an earlier
round ((step, round) < (s, r)), so a rerun of the same round searches the same batches (and
Prefect answers them from its cache) even though the first run already stored what they found.

Metrics per round, over the pool of every repository seen so far (split `train`):
`round`, `attempted` (theorems searched), `newly_proved` (of those, proved by the round's
search), `proved_so_far` (train theorems with a found proof up to this round), `own_share`
(newly_proved / proved_so_far: the share the round's own checkpoint proved), `found_pairs`
((state, tactic) pairs the round's training added), `train_loss` (of the round's training).
pass@k on val and test is the proving evaluation's, under the round's trained checkpoint.

    python -c "help('tasks.expert.rounds')"
"""

from __future__ import annotations

from storage.found_proofs import read_found
from tasks.metric_registry import register_metric
from tasks.run_records import MetricRow

TRAINER = "expert_iteration"  # the `trainer` column of round metrics
COUNTS = ("round", "attempted", "newly_proved", "proved_so_far", "found_pairs")
# What a round's figures mean (tasks/metric_registry.py): bookkeeping, none a skill to forget.
for _name in COUNTS:
    register_metric(_name, direction=None, kind="count", unit="round" if _name == "round" else "theorems")
register_metric(
    "own_share", direction=None, kind="diagnostic", unit="share", description="newly proved / proved so far"
)
register_metric(
    "train_loss", direction=None, kind="diagnostic", unit="nats/token", description="the round's training loss"
)


def found_up_to(store, repo_ids: list[str], step: int, round: int, inclusive: bool) -> list[dict]:
    """Found proofs of `repo_ids` from rounds before (step, round), or up to it when `inclusive`;
    in theorem id order, so the training rows (and the round's snapshot id) do not depend on when
    a row was written."""
    key = (step, round)
    rows = [
        f
        for f in read_found(store, repo_ids)
        if ((f["step"], f["round"]) <= key if inclusive else (f["step"], f["round"]) < key)
    ]
    return sorted(rows, key=lambda f: (f["theorem_id"], f["toolchain"]))


def round_metrics(
    records: list, proved_so_far: int, found_pairs: int, train_loss: float | None, round: int
) -> dict[str, float]:
    """{metric: value} of one round (see the module doc); `records`: its `SearchRecord`s."""
    newly = sum(1 for r in records if r.proof)
    out = {
        "round": float(round),
        "attempted": float(len(records)),
        "newly_proved": float(newly),
        "proved_so_far": float(proved_so_far),
        "own_share": newly / proved_so_far if proved_so_far else 0.0,
        "found_pairs": float(found_pairs),
    }
    if train_loss is not None:
        out["train_loss"] = float(train_loss)
    return out


def metric_rows(figures: dict[str, float], repo_id: str, split_kind: str, checkpoint_id: str) -> list[MetricRow]:
    """Rows for storage/metrics.py: keyed by the checkpoint that searched in the round (one per round)."""
    count = int(figures["attempted"])
    return [
        MetricRow(repo_id=repo_id, trainer=TRAINER, split_kind=split_kind, split="train", metric=name, value=value,
                  count=count, checkpoint_id=checkpoint_id).declared()
        for name, value in figures.items()
    ]  # fmt: skip
