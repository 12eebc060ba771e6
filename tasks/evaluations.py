"""The evaluations a curriculum step runs besides each trainer's own `evaluate`, declared once.

A trainer scores its own checkpoints (`TrainerDef.evaluate`, tasks/trainers/base.py). An
evaluation declared here runs on the checkpoints of every trainer it applies to (proof
search takes any tactic generator's), after that trainer's training and evaluation. Its
declaration is the only place to add one: the config's `evaluation.<name>` section
(`tasks/config.py` builds `EvaluationConfig` from these), the check before a run
(`PipelineConfig.validate_for_run`) and the curriculum's loop (flows/curriculum.py) all
read `EVALUATIONS`.

Its run is flow-level (it starts Prefect tasks), so it lives under flows/ and the flow
registers it: `flows.curriculum.EVALUATION_RUNS[name]`, with this signature:

    run(at: StepContext, settings, checkpoint: CheckpointRef) -> dict
        Evaluate the step's checkpoint on `at.eval_repos` and record its metrics under
        `at.run_id` and `at.step` (tasks/plan.py `StepContext`: the step's context, one object).

A declaration names only what lies below it (tasks/, storage/): import strings in a
declaration point down (tests/test_layering.py checks it).

Importing this module imports no torch and no Prefect.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel

from .proving.config import ProvingSettings
from .trainers.base import load_object


@dataclass(frozen=True)
class EvaluationDef:
    """One step evaluation: its config section, which checkpoints it takes and its checks (the flow
    registers its run: `flows.curriculum.EVALUATION_RUNS`)."""

    name: str  # the key under the config's `evaluation:` (null there turns it off, the default)
    settings: type[BaseModel]
    description: str  # the config field's description (the Prefect UI form shows it)
    applies_to: str  # "module:function(checkpoint_ref) -> bool": which checkpoints it evaluates
    preflight: str | None = None  # "module:function(settings, field)": checks before any training

    def applies(self, checkpoint) -> bool:
        return bool(load_object(self.applies_to)(checkpoint))

    def check(self, settings) -> None:
        """Raise InputError if `settings` cannot run on this machine (before any training)."""
        if self.preflight is not None:
            load_object(self.preflight)(settings, f"evaluation.{self.name}")


def check_proving(settings: ProvingSettings, field: str) -> None:
    """A proving backend that cannot run fails before any training, not after the first step."""
    from .lean import preflight

    preflight(settings.backend)


EVALUATIONS: tuple[EvaluationDef, ...] = (
    EvaluationDef(
        name="proving",
        settings=ProvingSettings,
        description="Proof search after the tactic generator trains: its checkpoint tries the theorems of "
        "`proving.splits` of every repository seen so far; pass@k per repository and split "
        "(tasks/proving/config.py, docs/proving.md). null: off.",
        applies_to="tasks.generate.checkpoint:is_tactic_generator",
        preflight="tasks.evaluations:check_proving",
    ),
)
