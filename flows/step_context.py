"""One curriculum step as its trainers, its step evaluations and expert iteration's rounds see it:
one object instead of the eight arguments each passed along (issue 26, room 4)."""

from __future__ import annotations

from dataclasses import dataclass

from storage.snapshot_ref import SnapshotRef
from tasks.config import PipelineConfig
from tasks.plan import Step, StepContext
from tasks.prefect_tasks import CurriculumTasks

from . import ui


@dataclass(frozen=True)
class CurriculumStep:
    """A curriculum step: its tasks, the pipeline config, the run, the ordered step and its snapshot."""

    t: CurriculumTasks
    home: str
    config: PipelineConfig
    run_id: str
    step: Step  # the ordered step (number, name, repositories)
    of: int  # how many steps the run has
    snapshot: SnapshotRef

    @property
    def eval_repos(self) -> list[str]:
        return self.step.seen if self.config.evaluation.all_repositories_so_far else self.step.repo_ids

    @property
    def context(self) -> StepContext:
        """What a step evaluation needs of it (tasks/evaluations.py)."""
        return StepContext(home=self.home, run_id=self.run_id, step=self.step, of=self.of,
                           split_kind=self.config.split_kind, eval_repos=self.eval_repos)  # fmt: skip

    def show(self, what: str, trainer: str | None = None) -> None:
        """The progress line: `what` of this step (and trainer)."""
        ui.show(what, self.step.step, self.of, trainer, self.step.name)
