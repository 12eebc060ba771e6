"""Shared pieces of the flow tests: small exports, a tiny real SFT config, task states."""

from __future__ import annotations

import asyncio
from contextlib import contextmanager
from pathlib import Path

from storage.synthetic import write_synthetic_export
from tasks.config import PipelineConfig, SourceConfig

TINY_SFT = {
    "training": {"max_steps": 2, "per_device_train_batch_size": 4, "logging_steps": 1, "save_steps": 1},
    "evaluation": {"top_k": 2, "max_new_tokens": 8, "max_eval_examples": 4},
}


def small_sources(root: Path, n: int = 3) -> list[SourceConfig]:
    """n synthetic exports of rising difficulty (1, 2, 3... tactics per proof)."""
    out = []
    for i in range(n):
        p = root / f"export-{i}"
        if not p.exists():
            write_synthetic_export(p, f"syn{i}", 12, i + 1, seed=i)
        out.append(SourceConfig(export=str(p)))
    return out


def config(root: Path, home: Path, n: int = 3, sft: dict | None = None, **kw) -> PipelineConfig:
    return PipelineConfig(
        name="test",
        home=str(home),
        sources=small_sources(root, n),
        trainers={"sft": sft if sft is not None else TINY_SFT},
        **kw,
    )


def train_states(result: dict, trainer: str = "sft") -> list[str]:
    return [s["trainers"][trainer]["train_state"] for s in result["steps"]]


def task_run_states(flow_run_ids: list[str], prefix: str) -> list[tuple[str, str]]:
    """(task run name, state name) of the named flow runs' task runs, from the Prefect API."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    async def read():
        async with get_client() as client:
            runs = await client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=flow_run_ids)))
            return [(r.name, r.state.name) for r in runs if r.name.startswith(prefix)]

    return asyncio.run(read())


@contextmanager
def heap_frozen():
    """Every `Trainer.train()` starts with a full garbage collection (accelerate's `free_memory`, for
    GPU memory); in a pytest process holding torch, transformers, TRL and Prefect one costs 0.3-1 s of
    CPU, more than a tiny training. Inside this block what already exists is out of the collector's
    reach (`gc.freeze`, no collection of its own), so those collections walk only what the block
    creates; it is handed back to the collector (`gc.unfreeze`) at the end, garbage included. A heap
    already frozen (the suite's, tests/conftest.py) stays as it is (tasks/lean/closing.heap_frozen)."""
    from tasks.lean.closing import heap_frozen as frozen

    with frozen():
        yield


def libraries_frozen():
    """A module fixture's body (`pytest.fixture(scope="module", autouse=True)(libraries_frozen)`):
    the module's runs go with the trainers' libraries frozen (tasks/lean/closing.heap_frozen,
    unfrozen after its last test). Every training start runs a full garbage collection
    (accelerate's free_memory), which otherwise walks torch's, transformers', TRL's and Prefect's
    objects; frozen, it walks only what the runs made. Imported first, so that they are frozen."""
    import matplotlib.pyplot  # noqa: F401  (the report's figures)
    import trl

    from tasks.lean.closing import heap_frozen

    trl.SFTTrainer, trl.SFTConfig  # noqa: B018  (trl's lazy modules: transformers' Trainer, peft, datasets)
    with heap_frozen():
        yield
