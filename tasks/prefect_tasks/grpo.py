"""The `dojoflow grpo` flows' tasks (flows/grpo.py), around tasks/grpo/theorem_files.py.

Training is keyed by the theorem file's content hash, the settings and the output folder;
evaluation by the checkpoint's content (`tasks.checkpoints.local_model_fingerprint`) too.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from prefect import task
from prefect.tasks import Task
from pydantic import JsonValue

from storage import atomic
from storage.ids import stable_hash
from storage.store import Store

from .. import limits
from ..checkpoints import local_model_fingerprint
from ..grpo.config import GRPOSettings
from ..grpo.theorem_files import evaluate_on_theorem_file, read_theorem_file, train_theorem_file
from .caching import cached_under
from .limits import holding


def file_hash(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


def _train_key(ctx, p) -> str:
    return "grpo-train-" + stable_hash(
        {
            "theorems": file_hash(p["theorem_file"]),
            "settings": p["settings"].model_dump(mode="json"),
            "output": str(Path(p["output"]).resolve()),
        },
        20,
    )


def _evaluate_key(ctx, p) -> str:
    return "grpo-evaluate-" + stable_hash(
        {
            "theorems": file_hash(p["theorem_file"]),
            "settings": p["settings"].model_dump(mode="json"),
            "checkpoint": local_model_fingerprint(p["checkpoint"]),
        },
        20,
    )


@task(name="grpo-train-file", task_run_name="grpo-train[{settings.algorithm}]")
def train_file_task(home: str, theorem_file: str, settings: GRPOSettings, output: str) -> dict[str, JsonValue]:
    """{output, figures by name}: the `dojoflow grpo train` answer (its keys are figure names)."""
    out = Path(output)
    with holding(limits.GPU, limits.gpu_slots(settings)), atomic.atomic_path(out) as tmp:
        figures = train_theorem_file(settings, theorem_file, tmp, out.with_name(f".{out.name}.work"), home)
    return {"output": str(out), **figures}


@task(name="grpo-evaluate-file", task_run_name="grpo-evaluate[{checkpoint}]")
def evaluate_file_task(home: str, checkpoint: str, theorem_file: str, settings: GRPOSettings) -> dict[str, JsonValue]:
    """The `dojoflow grpo evaluate` answer: pass@k by checker name, intervals, per-theorem results."""
    return evaluate_on_theorem_file(settings, Path(checkpoint), read_theorem_file(theorem_file), Store.open(home))


@dataclass(frozen=True)
class GRPOTasks:
    """The GRPO flows' tasks, configured for one Dojoflow home (`grpo_tasks`)."""

    train: Task
    evaluate: Task


def grpo_tasks(home: str | Path) -> GRPOTasks:
    """Both tasks cached under `home` like the curriculum's tasks."""
    cached = cached_under(Path(home))
    return GRPOTasks(train=cached(train_file_task, _train_key), evaluate=cached(evaluate_file_task, _evaluate_key))
