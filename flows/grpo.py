"""The `dojoflow grpo` flows: GRPO on a lean-grpo theorem file, and pass@k of a checkpoint on one.

    dojoflow grpo train theorems.jsonl -a dapo -o out/dapo
    dojoflow grpo evaluate out/dapo theorems.jsonl

Each is one cached Prefect task inside a flow, so runs show in the Prefect UI and a rerun
with the same theorems (by content), settings and output is Cached: training is keyed by
the file's content hash and the settings; evaluation by the checkpoint's content
(`tasks.checkpoints.local_model_fingerprint`) too. A cached training whose output
folder was removed since is trained again. The logic is in tasks/grpo/theorem_files.py.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from prefect import flow, task

from storage import atomic
from storage.ids import stable_hash
from storage.store import Store
from tasks.checkpoints import local_model_fingerprint
from tasks.grpo.config import GRPOSettings
from tasks.grpo.theorem_files import evaluate_on_theorem_file, read_theorem_file, train_on_theorem_file
from tasks.models.loading import MODEL_INFO
from tasks.prefect_tasks import cached_under


def file_hash(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


def _train_key(ctx, p) -> str:
    return "grpo-train-" + stable_hash(
        {
            "theorems": file_hash(p["theorem_file"]),
            "settings": p["settings"],
            "output": str(Path(p["output"]).resolve()),
        },
        20,
    )


def _evaluate_key(ctx, p) -> str:
    return "grpo-evaluate-" + stable_hash(
        {
            "theorems": file_hash(p["theorem_file"]),
            "settings": p["settings"],
            "checkpoint": local_model_fingerprint(p["checkpoint"]),
        },
        20,
    )


@task(name="grpo-train-file", task_run_name="grpo-train[{settings[algorithm]}]")
def train_file_task(home: str, theorem_file: str, settings: dict, output: str) -> dict:
    out = Path(output)
    with atomic.atomic_path(out) as tmp:
        figures = train_on_theorem_file(
            GRPOSettings.model_validate(settings),
            read_theorem_file(theorem_file),
            tmp,
            out.with_name(f".{out.name}.work"),
            Store.open(home),
        )
    return {"output": str(out), **figures}


@task(name="grpo-evaluate-file", task_run_name="grpo-evaluate[{checkpoint}]")
def evaluate_file_task(home: str, checkpoint: str, theorem_file: str, settings: dict) -> dict:
    return evaluate_on_theorem_file(
        GRPOSettings.model_validate(settings), Path(checkpoint), read_theorem_file(theorem_file), Store.open(home)
    )


@flow(name="grpo-train", flow_run_name="grpo-train[{settings[algorithm]}]", persist_result=False)
def grpo_train(home: str, theorem_file: str, settings: dict, output: str) -> dict:
    train = cached_under(Path(home))(train_file_task, _train_key)
    if not (Path(output) / MODEL_INFO).is_file():
        train = train.with_options(refresh_cache=True)  # a cached result whose folder is gone: train again
    state = train(home, theorem_file, settings, output, return_state=True)
    return {**state.result(), "cached": state.name == "Cached"}


@flow(name="grpo-evaluate", flow_run_name="grpo-evaluate", persist_result=False)
def grpo_evaluate(home: str, checkpoint: str, theorem_file: str, settings: dict) -> dict:
    state = cached_under(Path(home))(evaluate_file_task, _evaluate_key)(
        home, checkpoint, theorem_file, settings, return_state=True
    )
    return {**state.result(), "cached": state.name == "Cached"}
