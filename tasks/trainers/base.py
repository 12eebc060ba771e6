"""The trainer interface: what one curriculum trainer declares (SFT, GRPO, retriever, progress).

A trainer is one `TrainerDef` in its own package (`tasks/<name>/trainer.py`), registered
with one line in `tasks/trainers/registry.py`. Everything else follows from it: the
config's `trainers:` section (`tasks/config.py`), the checks before a run
(`tasks/trainers/preflight.py`), checkpoint ids and manifests (`tasks/checkpoints.py`),
the order trainers run in at a step, and evaluation. See docs/adding-a-trainer.md.

The two functions a trainer names (import strings, so naming a trainer imports no torch):

    train(settings, snapshot, split_kind, parent_dir, out_dir, work_dir, *, model_cache_dir) -> dict
        Train on `snapshot.tactics(split_kind, "train")`, starting from the model in
        `parent_dir` (the checkpoint this step starts from: the trainer's own previous
        step, or, with `starts_from`, another trainer's checkpoint of this step), or
        from the base model named in `settings` when `parent_dir` is None. Write a
        loadable model into `out_dir`, a temporary folder the caller renames into
        place. `work_dir` is stable across attempts of the same step: keep Trainer
        checkpoints there to resume after a crash. `model_cache_dir` is where builtin
        base models are built. Return JSON-serialisable training figures; raise
        `SkipTraining` when there is nothing to learn.

    evaluate(settings, checkpoint_dir, snapshot, split_kind, splits, repo_ids, *, model_cache_dir) -> list[Metric]
        Score the checkpoint on each (repository, split) and return metric rows.

Neither imports Prefect; both import torch/transformers lazily.
"""

from __future__ import annotations

import importlib
import inspect
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Protocol

from pydantic import BaseModel

from storage.errors import InputError
from storage.snapshot_ref import SnapshotRef
from tasks.metric_registry import meaning, register_metric

# Bookkeeping metric: how many examples a (repository, split) had (value = count), so
# that an empty split is recorded as 0 rather than absent (`tasks.report` shows it as a count).
EXAMPLES = "examples"
register_metric(EXAMPLES, direction=None, kind="count", unit="examples", description="examples evaluated")


@dataclass(frozen=True)
class Metric:
    """One evaluation figure: `value` of `metric` for `repo_id` on `split`."""

    repo_id: str
    split: str
    metric: str
    value: float
    count: int = 0  # how many examples the figure averages over
    ci_low: float | None = None  # its 95% interval, where one is computed (tasks/stats.py)
    ci_high: float | None = None
    interval: str | None = None  # how: "wilson" or "bootstrap(...)"
    benchmark: str | None = None  # the fingerprint of the benchmark it is computed on, if any

    def __post_init__(self):
        meaning(self.metric)  # an undeclared name fails here, where it is produced (tasks/metric_registry.py)

    def to_dict(self) -> dict:
        """The row for the catalog, with the metric's declared meaning (direction, kind, ...)."""
        return {**asdict(self), **meaning(self.metric)}


class TrainFn(Protocol):
    def __call__(
        self,
        settings,
        snapshot: SnapshotRef,
        split_kind: str,
        parent_dir: Path | None,
        out_dir: Path,
        work_dir: Path,
        *,
        model_cache_dir: Path,
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
        *,
        model_cache_dir: Path,
    ) -> list[Metric]: ...


class ParentMismatchError(InputError):
    """The configured base model cannot continue from the parent checkpoint (its shape differs).

    With a parent checkpoint, training continues from the parent's weights; the configured
    model only names the base of the curriculum. One of another shape would be ignored there,
    so it is refused rather than silently not used. Not transient: a retry fails again.
    """

    def __init__(self, field: str, configured: str, parent_dir, problem: str, fix: str, where: str | None = None):
        self.configured, self.parent_dir = configured, str(parent_dir)
        super().__init__(source=f"{field} {configured!r}", problem=problem, fix=fix, where=where)


@dataclass(frozen=True)
class EvaluationJob:
    """What one evaluation is asked (the EvaluateFn arguments after the settings), as one object."""

    checkpoint_dir: Path
    snapshot: SnapshotRef
    split_kind: str
    splits: list[str]
    repo_ids: list[str]
    model_cache_dir: Path | None = None

    def fields(self) -> tuple:
        """(checkpoint_dir, snapshot, split_kind, splits, repo_ids, model_cache_dir)."""
        return self.checkpoint_dir, self.snapshot, self.split_kind, self.splits, self.repo_ids, self.model_cache_dir


def evaluation(fn):
    """`fn(settings, job: EvaluationJob) -> list[Metric]` as an EvaluateFn: the interface's
    signature written once, here, not in every trainer's evaluation module.

    >>> @evaluation
    ... def count(settings, job):
    ...     return [(r, s) for r in job.repo_ids for s in job.splits]
    >>> count(None, "ckpt", None, "random", ["test"], ["a", "b"], model_cache_dir=None)
    [('a', 'test'), ('b', 'test')]
    >>> signature_mismatch(count, EvaluateFn) is None
    True
    """

    def evaluate(settings, checkpoint_dir, snapshot, split_kind, splits, repo_ids, *, model_cache_dir=None):
        job = EvaluationJob(Path(checkpoint_dir), snapshot, split_kind, list(splits), list(repo_ids), model_cache_dir)
        return fn(settings, job)

    evaluate.__name__, evaluate.__qualname__, evaluate.__doc__ = fn.__name__, fn.__qualname__, fn.__doc__
    evaluate.__module__ = fn.__module__
    return evaluate


class SkipTraining(Exception):
    """Raised by a trainer when a step has nothing to learn from; `reason` is recorded.

    The caller then carries the parent checkpoint forward unchanged and records why.
    """

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(reason)


def load_object(ref: str):
    """The object an import string `package.module:name` names."""
    module, _, name = ref.partition(":")
    return getattr(importlib.import_module(module), name)


def signature_mismatch(fn, protocol: type) -> str | None:
    """Why `fn` does not take the parameters of `protocol.__call__` (names, kinds, order), or None."""
    want = [p for p in inspect.signature(protocol.__call__).parameters.values() if p.name != "self"]
    have = list(inspect.signature(fn).parameters.values())
    positional = [p.name for p in have if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    expected = [p.name for p in want if p.kind == p.POSITIONAL_OR_KEYWORD]
    if positional[: len(expected)] != expected:
        return f"takes positional parameters {positional}, expected {expected}"
    names = {p.name: p for p in have}
    for p in want:
        if p.kind == p.KEYWORD_ONLY and p.name not in names and not any(h.kind == h.VAR_KEYWORD for h in have):
            return f"does not take the keyword argument {p.name!r}"
    extra = [
        p.name
        for p in have[len(expected) :]
        if p.default is p.empty
        and p.name not in {w.name for w in want}
        and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)
    ]
    if extra:
        return f"requires parameters the caller never passes: {extra}"
    return None


@dataclass(frozen=True)
class TrainerDef:
    """One curriculum trainer, declared once (docs/adding-a-trainer.md).

    `settings` is its pydantic settings model (the config's `trainers.<name>` section);
    its import must not import torch. `train` and `evaluate` are import strings of
    functions with the signatures above. `starts_from` names another trainer whose
    checkpoint of the same step this one starts from (GRPO from SFT): that trainer
    then trains first, and its checkpoint id is part of this one's. `generates_tactics`
    says its checkpoints are causal LMs that propose tactics: search and the proving
    evaluation (`tasks/evaluations.py`) take them, and refuse the others' checkpoints.
    """

    name: str
    settings: type[BaseModel]
    train: str
    evaluate: str
    description: str  # the config field's description (the Prefect UI form shows it)
    holds: str  # what its checkpoint folder holds, recorded in every manifest
    model_fields: tuple[str, ...] = ("model",)  # settings fields that name a base model
    preflight: str | None = None  # "module:function(settings, field)": more checks before a run
    starts_from: str | None = None
    enabled_by_default: bool = False
    generates_tactics: bool = False
    # "module:function(store, settings, snapshot, split_kind) -> SnapshotRef": the snapshot this trainer
    # trains on at a step, the step's plus data it adds from the store; its id must hash what it adds
    # (a proof snapshot, storage/proof_snapshot.py), so the checkpoint id follows the data. None: the step's.
    data: str | None = None
    # "module:function(trained: dict) -> ProofWriter" (tasks/generate/base.py): its checkpoints write whole
    # proofs from a theorem's statement, and are asked so in the prompt they trained on (`trained`: the
    # settings the checkpoint records); tasks/generate/checkpoint.py asks them. None: they are asked a goal.
    proof_writer: str | None = None

    def train_fn(self) -> TrainFn:
        return self._checked(self.train, TrainFn)

    def evaluate_fn(self) -> EvaluateFn:
        return self._checked(self.evaluate, EvaluateFn)

    def _checked(self, ref: str, protocol: type):
        fn = load_object(ref)
        why = signature_mismatch(fn, protocol)
        if why is not None:
            raise TypeError(f"trainer {self.name!r}: {ref} {why} (the interface: tasks/trainers/base.py)")
        return fn

    def start_of(self, settings) -> str | None:
        """The trainer whose same-step checkpoint this one starts from: the settings' own
        `starts_from` when it has one (a user's choice), else the declaration's."""
        return getattr(settings, "starts_from", self.starts_from)
