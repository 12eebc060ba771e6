"""The `dojoflow grpo` flows: GRPO on a lean-grpo theorem file, and pass@k of a checkpoint on one.

    dojoflow grpo train theorems.jsonl -a dapo -o out/dapo
    dojoflow grpo evaluate out/dapo theorems.jsonl

Each is one cached Prefect task inside a flow (tasks/prefect_tasks/grpo.py), so runs show in
the Prefect UI and a rerun with the same theorems (by content), settings and output is
Cached. A cached training whose output folder was removed since is trained again. The logic
is in tasks/grpo/theorem_files.py. Their parameters are typed (`GRPOSettings`), so the UI
shows them as a form, as it does the curriculum's config.
"""

from __future__ import annotations

from pathlib import Path

from prefect import flow

from tasks.grpo.config import GRPOSettings
from tasks.models.loading import MODEL_INFO
from tasks.prefect_tasks import grpo_tasks


@flow(name="grpo-train", flow_run_name="grpo-train[{settings.algorithm}]", persist_result=False)
def grpo_train(home: str, theorem_file: str, settings: GRPOSettings, output: str) -> dict:
    """GRPO on the theorems of a lean-grpo theorem file; the trained model is published to `output`.

    Args:
        home: The Dojoflow home (its store names theorems the backend can check; its cache).
        theorem_file: A lean-grpo theorem file: JSONL, a JSON list, or {"theorems": [...]}.
        settings: The GRPO settings (algorithm, rewards, backend, model, training).
        output: The checkpoint folder the model is published to.
    """
    train = grpo_tasks(home).train
    if not (Path(output) / MODEL_INFO).is_file():
        train = train.with_options(refresh_cache=True)  # a cached result whose folder is gone: train again
    state = train(home, theorem_file, settings, output, return_state=True)
    return {**state.result(), "cached": state.name == "Cached"}


@flow(name="grpo-evaluate", flow_run_name="grpo-evaluate", persist_result=False)
def grpo_evaluate(home: str, checkpoint: str, theorem_file: str, settings: GRPOSettings) -> dict:
    """pass@1 and pass@k of whole-proof sampling from a checkpoint on a lean-grpo theorem file.

    Args:
        home: The Dojoflow home (its store names theorems the backend can check; its cache).
        checkpoint: A checkpoint folder (`dojoflow grpo train -o`, or any causal LM).
        theorem_file: A lean-grpo theorem file: JSONL, a JSON list, or {"theorems": [...]}.
        settings: The GRPO settings; `evaluation` (k, sampling) and `backend` are the ones used.
    """
    state = grpo_tasks(home).evaluate(home, checkpoint, theorem_file, settings, return_state=True)
    return {**state.result(), "cached": state.name == "Cached"}
