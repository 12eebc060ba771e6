"""The records a curriculum run passes between its tasks, typed: a metric row, each step's
results and the report's answer (as tasks/proving/records.py types the search's records).

Frozen pydantic models, so a task's result is stored as JSON by Prefect's serializer (the
class's import path and its fields) and read back as the model. A cached result written before
these models holds the dicts that travelled then, whose keys are these fields: `of` validates
one into its model unchanged, and one Prefect could not import the class of (a class moved)
from its `data` (`tests/tasks/test_run_records.py`).

- `MetricRow`: one figure for the catalog's `metrics` table (storage/metrics.py), its columns
  less those recording adds (`run_id`, `step`, `step_repo_id`, `recorded_at`), with its metric's
  declared meaning (tasks/metric_registry.py).
- `TrainerStep`, `StepResult`: what the report and the terminal say of each step.
- `Report`: the written report (tasks/report.py `write_report`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, TypeVar

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from .checkpoints import CheckpointRef
from .metric_registry import with_meaning

R = TypeVar("R", bound="_Record")

# The fields that name a figure, shared by the metric row and the regression event (tasks/events.py).
TrainerName = Annotated[
    str, Field(description="The trainer evaluated (`proving`, `expert_iteration` for those figures).")
]
SplitKindName = Annotated[str, Field(description="The split kind (random, novel_premises).")]
SplitName = Annotated[str, Field(description="The split (train, val, test, benchmark).")]
MetricName = Annotated[
    str, Field(description="The metric's name, declared with tasks.metric_registry.register_metric.")
]


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    @classmethod
    def of(cls: type[R], value: R | dict) -> R:
        """`value` as this model: itself, the dict it travelled as before the model, or Prefect's
        JSON of a model whose class it could not import (`{"__class__": ..., "data": {...}}`)."""
        if isinstance(value, cls):
            return value
        if isinstance(value, dict) and set(value) == {"__class__", "data"}:
            value = value["data"]
        return cls.model_validate(value)

    @classmethod
    def all(cls: type[R], values: Iterable[R | dict]) -> list[R]:
        return [cls.of(v) for v in values]


class MetricRow(_Record):
    """One figure of a checkpoint on a repository's split, as the `metrics` table records it."""

    repo_id: str = Field(description="The repository (or `benchmark:<name>` group) it is computed on.")
    trainer: TrainerName
    split_kind: SplitKindName
    split: SplitName
    metric: MetricName
    value: float = Field(description="The figure.")
    count: int = Field(0, description="How many items (theorems, examples) it is over.")
    checkpoint_id: str = Field(description="The checkpoint evaluated.")
    ci_low: float | None = Field(None, description="Its 95% interval's low end, where one is computed.")
    ci_high: float | None = Field(None, description="Its 95% interval's high end.")
    interval: str | None = Field(None, description="How the interval is computed (wilson, bootstrap(...)).")
    benchmark: str | None = Field(None, description="The fingerprint of the benchmark it is computed on, if any.")
    direction: str | None = Field(None, description="Declared: which way is better (higher, lower); None: no skill.")
    kind: str | None = Field(None, description="Declared: score, baseline, count, cost or diagnostic.")
    unit: str | None = Field(None, description="Declared: its unit (share, seconds, theorems, ...).")
    question: str | None = Field(None, description="Declared: the question it answers (the report's panel).")
    baseline_metric: str | None = Field(None, description="Declared: the metric it is compared with.")

    @classmethod
    def of_metric(cls, metric, trainer: str, split_kind: str, checkpoint_id: str) -> MetricRow:
        """The row of an evaluation's `Metric` (tasks/trainers/base.py), with what names the figure."""
        return cls(**metric.to_dict(), trainer=trainer, split_kind=split_kind, checkpoint_id=checkpoint_id)

    def declared(self) -> MetricRow:
        """This row with its metric's declared meaning (raises tasks.metric_registry.UndeclaredMetric)."""
        return MetricRow.model_validate(with_meaning(self.model_dump()))


class TrainerStep(_Record):
    """One trainer at one step: its checkpoint, and whether train and evaluate ran or were Cached."""

    checkpoint: CheckpointRef = Field(description="The checkpoint the step published (or carried forward).")
    seconds: float = Field(0.0, description="Training seconds (the checkpoint's figures).")
    train_state: str = Field(description="The train task's final state: Completed or Cached.")
    evaluate_state: str = Field(description="The evaluate task's final state.")
    metrics: int = Field(0, description="How many metric rows the evaluation gave.")
    expert_rounds: tuple[dict[str, JsonValue], ...] | None = Field(
        None, description="Expert iteration's rounds at this step, one summary each (flows/expert.py)."
    )


class StepResult(_Record):
    """One curriculum step's results: the report's and the terminal's input."""

    step: int = Field(description="The step's number, from 1.")
    name: str = Field(description="The repository the step adds.")
    snapshot: str = Field(description="The id of the snapshot it trained on.")
    trainers: dict[str, TrainerStep] = Field(description="Each trainer's results, in the order they ran.")
    wall_seconds: float = Field(0.0, description="The step's wall-clock seconds.")


class Report(_Record):
    """The written run report."""

    markdown: str = Field(description="The report's Markdown.")
    path: str = Field(description="Where `report.md` is.")
    plot: str | None = Field(None, description="Where its plot is (None: nothing to plot).")
    metrics: int = Field(0, description="How many metric rows it shows.")
