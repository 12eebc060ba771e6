"""The interface every curriculum trainer implements (SFT, GRPO, retriever, progress).

A trainer is two plain functions, registered in `tasks/trainers/registry.py`:

    train(settings, snapshot, split_kind, parent_dir, out_dir, work_dir) -> dict
        Train on `snapshot.tactics(split_kind, "train")`, starting from the model in
        `parent_dir` (the previous curriculum step's checkpoint), or from the base model
        named in `settings` when `parent_dir` is None. Write a loadable model
        (`save_pretrained` layout, or adapters for LoRA) into `out_dir`, which is a
        temporary folder the caller renames into place. `work_dir` is stable across
        attempts of the same step: keep Trainer checkpoints there to resume after a
        crash. Return a small dict of training figures (JSON-serialisable).

    evaluate(settings, checkpoint_dir, snapshot, split_kind, splits, repo_ids) -> list[Metric]
        Score the checkpoint on each (repository, split) and return metric rows.

Neither function imports Prefect; both import torch/transformers lazily.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Protocol

from storage.snapshot_ref import SnapshotRef


# Bookkeeping metric: how many examples a (repository, split) had (value = count), so
# that an empty split is recorded as 0 rather than absent (`tasks.report` shows it as a count).
EXAMPLES = "examples"


@dataclass(frozen=True)
class Metric:
    """One evaluation figure: `value` of `metric` for `repo_id` on `split`."""

    repo_id: str
    split: str
    metric: str
    value: float
    count: int = 0  # how many examples the figure averages over

    def to_dict(self) -> dict:
        return asdict(self)


class TrainFn(Protocol):
    def __call__(
        self,
        settings,
        snapshot: SnapshotRef,
        split_kind: str,
        parent_dir: Path | None,
        out_dir: Path,
        work_dir: Path,
    ) -> dict: ...


class EvaluateFn(Protocol):
    def __call__(
        self,
        settings,
        checkpoint_dir: Path,
        snapshot: SnapshotRef,
        split_kind: str,
        splits: list[str],
        repo_ids: list[str],
    ) -> list[Metric]: ...


class SkipTraining(Exception):
    """Raised by a trainer when a step has nothing to learn from; `reason` is recorded.

    The caller then carries the parent checkpoint forward unchanged and records why.
    """

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(reason)
