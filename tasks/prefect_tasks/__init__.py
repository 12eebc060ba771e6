"""Prefect task wrappers: the only package under tasks/ that imports Prefect (tests/test_layering.py).

One shape everywhere: module-level `@task` functions of a few lines, each a name, retries
and a cache key around one plain function of tasks/ or storage/, and per flow a frozen
dataclass of them configured for one Dojoflow home (results as JSON and file locks under
it), built by `<area>_tasks(home)`:

    curriculum.py   curriculum_tasks(home) -> CurriculumTasks   (flows/curriculum.py)
    proving.py      proving_tasks(home)    -> ProvingTasks      (flows/prove.py)
    grpo.py         grpo_tasks(home)       -> GRPOTasks         (flows/grpo.py)
    nightly.py      nightly_tasks(home)    -> NightlyTasks      (flows/nightly.py)
    expert.py       expert_tasks(home)     -> ExpertTasks       (flows/expert.py)
                    whole_proof_tasks(home) -> WholeProofTasks  (flows/expert_whole.py)
    events.py       emitting events, and find_regressions_task (imported by name)
    checkpoint_storage.py   share_checkpoint_task (imported by name), fetching checkpoints back
    caching.py      the JSON result cache, the retry rule
    limits.py       holding(name, slots): the gpu/lean/trace concurrency limits (tasks/limits.py)

Every task parameter and return is typed, never a bare dict (tests/test_task_types.py).
"""

from __future__ import annotations

from .caching import cached_under
from .curriculum import CurriculumTasks, cached_checkpoint_gone, curriculum_tasks
from .expert import ExpertTasks, WholeProofTasks, expert_tasks, whole_proof_tasks
from .grpo import GRPOTasks, grpo_tasks
from .nightly import NightlyTasks, nightly_tasks
from .proving import ProvingTasks, proving_tasks

__all__ = [
    "CurriculumTasks",
    "ExpertTasks",
    "GRPOTasks",
    "NightlyTasks",
    "ProvingTasks",
    "WholeProofTasks",
    "cached_checkpoint_gone",
    "cached_under",
    "curriculum_tasks",
    "expert_tasks",
    "grpo_tasks",
    "nightly_tasks",
    "proving_tasks",
    "whole_proof_tasks",
]
