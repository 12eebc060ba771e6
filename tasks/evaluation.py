"""Evaluate a step's checkpoint on every repository seen so far, and record metrics.

Metrics go to the catalog's `metrics` table, one row per (checkpoint, repository,
split kind, split, metric), so forgetting across the curriculum is one query away:

    dojoflow sql "SELECT step, repo_id, metric, value FROM metrics WHERE split='test' ORDER BY step"
"""

from __future__ import annotations

from pathlib import Path

from storage import metrics
from storage.snapshot_ref import SnapshotRef

from .checkpoints import CheckpointRef
from .models.loading import default_model_cache
from .run_records import MetricRow
from .trainers import registry


def evaluate_step(
    home: Path,
    trainer: str,
    settings,
    checkpoint: CheckpointRef,
    snapshot: SnapshotRef,
    split_kind: str,
    splits: list[str],
    repo_ids: list[str],
) -> list[MetricRow]:
    if not checkpoint.has_model:
        return []  # skipped with nothing to carry forward; the report says why
    evaluate_fn = registry.get(trainer).evaluate_fn()
    metrics = evaluate_fn(
        settings,
        Path(checkpoint.path),
        snapshot,
        split_kind,
        list(splits),
        list(repo_ids),
        model_cache_dir=default_model_cache(home),
    )
    return [MetricRow.of_metric(m, trainer, split_kind, checkpoint.checkpoint_id) for m in metrics]


def record_metrics(store, rows: list[MetricRow | dict], run_id: str, step: int, step_repo_id: str) -> int:
    """Write metric rows, each with its metric's declared meaning (a cached evaluation's rows from
    before the declarations gain it here); a re-evaluated checkpoint replaces its earlier rows.
    A row whose metric no module declares is refused (tasks/metric_registry.py). A row may be the
    dict a cached evaluation of an earlier version holds (`MetricRow.of`)."""
    declared = [MetricRow.of(r).declared().model_dump() for r in rows]
    return metrics.record(store, declared, run_id, step, step_repo_id)
