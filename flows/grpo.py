"""The `dojoflow grpo` flows: GRPO on a lean-grpo theorem file, and pass@k of a checkpoint on one.

    dojoflow grpo train theorems.jsonl -a dapo -o out/dapo
    dojoflow grpo evaluate out/dapo theorems.jsonl

Each is one cached Prefect task inside a flow, so runs show in the Prefect UI and a rerun
with the same theorems (by content), settings and output is Cached: training is keyed by
the file's content hash and the settings; evaluation by the checkpoint's content
(`dojoflow_model.json` and its weight files' sizes) too. A cached training whose output
folder was removed since is trained again. The logic is in tasks/grpo/theorem_files.py.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

from prefect import flow, task
from prefect.cache_policies import CacheKeyFnPolicy

from storage.ids import stable_hash
from storage.store import Store
from tasks.grpo.config import GRPOSettings
from tasks.grpo.theorem_files import evaluate_on_theorem_file, read_theorem_file, train_on_theorem_file
from tasks.models.loading import MODEL_INFO
from tasks.prefect_locking import FlockLockManager


def file_hash(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


def checkpoint_fingerprint(path: str) -> str:
    """The checkpoint's identity: its model info and the names and sizes of its files."""
    folder = Path(path)
    info = (folder / MODEL_INFO).read_text() if (folder / MODEL_INFO).is_file() else ""
    files = sorted((p.name, p.stat().st_size) for p in folder.iterdir() if p.is_file())
    return stable_hash({"info": info, "files": files}, 16)


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
            "checkpoint": checkpoint_fingerprint(p["checkpoint"]),
        },
        20,
    )


def _cached(t, key_fn, home: Path):
    policy = CacheKeyFnPolicy(cache_key_fn=key_fn).configure(
        key_storage=home / "prefect" / "cache-keys",
        lock_manager=FlockLockManager(home / "prefect" / "locks"),
        isolation_level="SERIALIZABLE",
    )
    return t.with_options(
        cache_policy=policy, result_storage=home / "prefect" / "results", result_serializer="json", persist_result=True
    )


@task(name="grpo-train-file", task_run_name="grpo-train[{settings[algorithm]}]")
def train_file_task(home: str, theorem_file: str, settings: dict, output: str) -> dict:
    out = Path(output)
    tmp = out.with_name(f".{out.name}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    figures = train_on_theorem_file(
        GRPOSettings.model_validate(settings),
        read_theorem_file(theorem_file),
        tmp,
        out.with_name(f".{out.name}.work"),
        Store.open(home),
    )
    shutil.rmtree(out, ignore_errors=True)
    os.replace(tmp, out)
    return {"output": str(out), **figures}


@task(name="grpo-evaluate-file", task_run_name="grpo-evaluate[{checkpoint}]")
def evaluate_file_task(home: str, checkpoint: str, theorem_file: str, settings: dict) -> dict:
    return evaluate_on_theorem_file(
        GRPOSettings.model_validate(settings), Path(checkpoint), read_theorem_file(theorem_file), Store.open(home)
    )


@flow(name="grpo-train", flow_run_name="grpo-train[{settings[algorithm]}]", persist_result=False)
def grpo_train(home: str, theorem_file: str, settings: dict, output: str) -> dict:
    train = _cached(train_file_task, _train_key, Path(home))
    if not (Path(output) / MODEL_INFO).is_file():
        train = train.with_options(refresh_cache=True)  # a cached result whose folder is gone: train again
    state = train(home, theorem_file, settings, output, return_state=True)
    return {**state.result(), "cached": state.name == "Cached"}


@flow(name="grpo-evaluate", flow_run_name="grpo-evaluate", persist_result=False)
def grpo_evaluate(home: str, checkpoint: str, theorem_file: str, settings: dict) -> dict:
    state = _cached(evaluate_file_task, _evaluate_key, Path(home))(
        home, checkpoint, theorem_file, settings, return_state=True
    )
    return {**state.result(), "cached": state.name == "Cached"}
