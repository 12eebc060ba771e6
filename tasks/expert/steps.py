"""The plain functions behind expert iteration's Prefect tasks (tasks/prefect_tasks/expert.py), one per
stage of a round: choose the pool, search a batch, store what was found, build the round's
training data, and its metrics. Each takes a store and typed values (tasks/proving/records.py, the
checkpoint and snapshot refs) and returns typed values Prefect stores as JSON (docs/expert-iteration.md).
"""

from __future__ import annotations

from pathlib import Path

from storage.found_proofs import record_found
from storage.snapshot_ref import SnapshotRef
from tasks.checkpoints import CheckpointRef
from tasks.lean.registry import get as backend_def
from tasks.proving.config import ProvingSettings
from tasks.proving.records import Pool, SampleRecord, SearchRecord, TheoremToTry
from tasks.run_records import MetricRow

from . import data, pool, rounds
from .pool import PoolRequest


def select(store, request: PoolRequest) -> Pool:
    """The round's pool: train theorems without a proof found before (step, round); in whole-proof
    mode, statements holding fewer than `stop_after` kept proofs (tasks/expert/whole_proof.py)."""
    r = request
    if r.settings.mode == "whole_proof":
        from . import whole_proof

        return whole_proof.select(store, r)
    earlier = rounds.found_up_to(store, r.repo_ids, r.step, r.round, inclusive=False)
    found = {(f["theorem_id"], f["toolchain"]) for f in earlier}
    p = r.settings.pool
    return pool.select_pool(store, r.repo_ids, r.split_kind, r.search, p.include_sorry, p.max_theorems, found)


def search(
    store,
    search: ProvingSettings,
    checkpoint: CheckpointRef,
    theorems: list[TheoremToTry],
    home: str,
    samples: int | None = None,
) -> list[SearchRecord] | list[SampleRecord]:
    """One batch: searched by `search`'s mode, or with `samples`, whole proofs sampled and checked."""
    if samples is not None:
        from .whole_proof import sample_batch

        return sample_batch(store, search, checkpoint.path, theorems, samples, Path(home) / "models")
    return pool.search_batch(store, search, checkpoint.path, theorems, Path(home) / "models")


def store_found(
    store, records: list[SearchRecord], search: ProvingSettings, run_id: str, step: int, round: int, checkpoint_id: str
) -> int:
    """Store the round's verified proofs (once per theorem and toolchain); how many were new."""
    from tasks.ledger import VERIFIER_RULE_VERSION

    rows = pool.found_rows(
        SearchRecord.all(records),
        lower_bound=backend_def(search.backend.kind).lower_bound,
        rule_version=str(VERIFIER_RULE_VERSION),
        run_id=run_id,
        step=step,
        round=round,
        checkpoint_id=checkpoint_id,
    )
    return record_found(store, rows)


def training_data(
    store, snapshot, split_kind: str, ratio: float, repo_ids: list[str], step: int, round: int
) -> tuple[SnapshotRef, dict[str, int]]:
    """(the round's snapshot, counts): traced data plus proofs found up to this round."""
    found = rounds.found_up_to(store, repo_ids, step, round, inclusive=True)
    ref, counts = data.round_snapshot(store, snapshot, split_kind, found, ratio)
    counts["proved_so_far"] = len({f["theorem_id"] for f in found})
    return ref, counts


def metrics(
    records: list[SearchRecord],
    counts: dict[str, int],
    train_loss: float | None,
    round: int,
    repo_id: str,
    split_kind: str,
    ckpt: str,
) -> list[MetricRow]:
    figures = rounds.round_metrics(records, counts["proved_so_far"], counts.get("pairs", 0), train_loss, round)
    return rounds.metric_rows(figures, repo_id, split_kind, ckpt)


def last_round_checkpoint(store, home: str, trainer: str) -> CheckpointRef | None:
    """The newest checkpoint of `trainer` an expert-iteration round trained in `home` (its folder
    still there); None when there is none."""
    from storage.checkpoint_registry import newest_trained_on
    from storage.mixed_snapshot import ID_PREFIX
    from tasks.checkpoints import load_published

    cid = newest_trained_on(store, trainer, ID_PREFIX)
    ref = load_published(Path(home), trainer, cid) if cid else None
    return ref
