"""`evaluate_progress`: how well a progress checkpoint predicts steps remaining.

For each requested split and repository, the checkpoint scores the progress rows of
that repository's proofs (see `tasks.progress.data`; at most `max_eval_examples`,
chosen by a stable hash) and reports

    MAE       mean |predicted − true| steps remaining
    MSE       mean (predicted − true)², the training loss
    spearman  Spearman rank correlation of predicted and true steps (ties get their
              average rank); left out when it is undefined: fewer than 2 rows, or
              constant targets or predictions

as `tasks.trainers.base.Metric` rows, with `count` = the rows scored and a 95% interval over
them (`regression_intervals`: a seeded bootstrap over rows; tasks/stats.py). Every requested
(repository, split) also gets an `examples` row (value = count = the rows scored), so an
empty split is recorded as `examples` 0 (and no MAE/MSE/spearman rows) rather than
silently absent. Implements `evaluate` of `tasks/trainers/base.py`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from storage.ids import stable_hash
from tasks.metric_registry import register_metric
from tasks.trainers.base import EXAMPLES, EvaluationJob, Metric, evaluation

from .config import ProgressSettings
from .data import ProgressExample, progress_examples

# What each figure means (tasks/metric_registry.py).
register_metric("MAE", direction="lower", kind="score", unit="steps", question="learning")
register_metric("MSE", direction="lower", kind="score", unit="steps^2", question="learning")
register_metric("spearman", direction="higher", kind="score", unit="correlation", question="learning")


def average_ranks(values: Sequence[float]) -> list[float]:
    """Ranks from 1, tied values sharing the mean of their ranks.

    >>> average_ranks([10, 20, 20, 30])
    [1.0, 2.5, 2.5, 4.0]
    """
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        rank = (start + end) / 2 + 1
        for k in range(start, end + 1):
            ranks[order[k]] = rank
        start = end + 1
    return ranks


def spearman(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Spearman's rho (Pearson correlation of average ranks); None where undefined.

    >>> spearman([1, 2, 3], [10, 20, 30])
    1.0
    >>> spearman([1, 1, 1], [1, 2, 3]) is None
    True
    """
    if len(x) != len(y):
        raise ValueError(f"spearman needs equal lengths, got {len(x)} and {len(y)}")
    if len(x) < 2:
        return None
    rx, ry = average_ranks(x), average_ranks(y)
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    vx = sum((a - mx) ** 2 for a in rx)
    vy = sum((b - my) ** 2 for b in ry)
    if vx == 0 or vy == 0:
        return None
    rho = cov / math.sqrt(vx * vy)
    return max(-1.0, min(1.0, rho))


def regression_metrics(predictions: Sequence[float], targets: Sequence[float]) -> dict[str, float]:
    """MAE, MSE and (where defined) spearman of predictions against targets; {} if empty."""
    if len(predictions) != len(targets):
        raise ValueError(f"{len(predictions)} predictions for {len(targets)} targets")
    if not targets:
        return {}
    n = len(targets)
    out = {
        "MAE": sum(abs(p - t) for p, t in zip(predictions, targets)) / n,
        "MSE": sum((p - t) ** 2 for p, t in zip(predictions, targets)) / n,
    }
    rho = spearman(predictions, targets)
    if rho is not None:
        out["spearman"] = rho
    return out


def regression_intervals(predictions: Sequence[float], targets: Sequence[float]) -> dict[str, dict]:
    """{metric: {ci_low, ci_high, interval}}: 95% intervals over the rows scored (tasks/stats.py),
    the seeded bootstrap of the mean for MAE and MSE, of the resampled pairs for spearman."""
    from tasks.stats import bootstrap_statistic_fields, interval_fields

    def rho(idx: list[int]) -> float | None:
        return spearman([predictions[i] for i in idx], [targets[i] for i in idx])

    return {
        "MAE": interval_fields([abs(p - t) for p, t in zip(predictions, targets)]),
        "MSE": interval_fields([(p - t) ** 2 for p, t in zip(predictions, targets)]),
        "spearman": bootstrap_statistic_fields(len(targets), rho),
    }


def sample_examples(examples: list[ProgressExample], limit: int | None) -> list[ProgressExample]:
    """At most `limit` rows, the same ones every time (ordered by a hash of their identity)."""
    if limit is None or len(examples) <= limit:
        return examples

    def key(e: ProgressExample) -> str:
        return stable_hash([e.repo_id, e.theorem_id, e.idx, e.tactic])

    return sorted(examples, key=key)[:limit]


@evaluation
def evaluate_progress(settings: ProgressSettings, job: EvaluationJob) -> list[Metric]:
    """Metric rows (examples, MAE, MSE, spearman) per repository in `repo_ids` and split in `splits`.
    (`model_cache_dir` is unused: a progress checkpoint is a whole model folder.)"""
    checkpoint_dir, snapshot, split_kind, splits, repo_ids, model_cache_dir = job.fields()
    from .scorer import ProgressScorer

    scorer = None
    metrics: list[Metric] = []
    for split in splits:
        examples = progress_examples(snapshot, split_kind, split, repo_ids).examples
        by_repo: dict[str, list[ProgressExample]] = {}
        for e in examples:
            by_repo.setdefault(e.repo_id, []).append(e)
        for repo_id in repo_ids:
            rows = sample_examples(by_repo.get(repo_id, []), settings.max_eval_examples)
            metrics.append(
                Metric(repo_id=repo_id, split=split, metric=EXAMPLES, value=float(len(rows)), count=len(rows))
            )
            if not rows:
                continue
            if scorer is None:
                scorer = ProgressScorer.load(checkpoint_dir, batch_size=settings.eval_batch_size)
            predictions = scorer.predict(rows)
            targets = [float(e.steps_remaining) for e in rows]
            figures = regression_metrics(predictions, targets)
            intervals = regression_intervals(predictions, targets)
            metrics.extend(
                Metric(
                    repo_id=repo_id, split=split, metric=name, value=float(value), count=len(rows), **intervals[name]
                )
                for name, value in figures.items()
            )
    return metrics
