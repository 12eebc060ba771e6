"""Proving as a curriculum evaluation, on the sample with the `replay` backend (no Lean:
every figure is a replay figure): pass@k per repository and split at every step, proofs
in the catalog and the report, Cached on rerun; and the same evaluation on a local Dask
cluster of two worker processes gives the same metrics as the default task runner.

    PYTHONPATH=$PWD HF_HUB_OFFLINE=1 .venv/bin/python -m pytest tests/flows/test_proving.py -q
"""

from __future__ import annotations

import json
import os
import socket
from contextlib import contextmanager, nullcontext
from pathlib import Path

import pytest

from storage import catalog
from storage.proofs import read_proofs
from storage.store import Store
from storage.theorem_results import read_results
from tasks.config import PipelineConfig, SourceConfig
from tasks.proving.config import ProvingSettings
from tests.doubles.sample_store import sample_store

from .fixtures import TINY_SFT, heap_frozen, task_run_states

PROVING = {
    "backend": {"kind": "replay"},
    "generator": {"decoding": "sample", "max_new_tokens": 8},
    "num_tactics": 2,
    "max_expansions": 2,
    "timeout_s": 300,
    "attempts": 2,
    "k": 2,
    "splits": ["train", "test"],
    "max_theorems": 3,
    "batch_size": 3,
}


def pipeline(home: Path) -> PipelineConfig:
    return PipelineConfig(
        name="proving-test",
        home=str(home),
        sources=[SourceConfig(sample="NatBasics")],
        max_steps=1,
        trainers={"sft": TINY_SFT},
        evaluation={"splits": ["test"], "proving": PROVING},
    )


def proving_metrics(store: Store, run_id: str) -> list[tuple]:
    return sorted(
        tuple(r.values())
        for r in catalog.query(
            store,
            """
        SELECT repo_id, split, metric, value, count FROM metrics
        WHERE trainer = 'proving' AND run_id = $run AND metric NOT LIKE '%proving_mean_seconds'""",
            params={"run": run_id},
        ).to_pylist()
    )


@pytest.fixture(scope="module")
def first_run(prefect, tmp_path_factory):
    from flows.curriculum import curriculum

    home = tmp_path_factory.mktemp("proving") / "home"
    with heap_frozen():
        return home, curriculum(config=pipeline(home))


def test_curriculum_records_replay_pass_at_k_per_repository_and_split(first_run):
    home, result = first_run
    store = Store.open(home)
    rows = proving_metrics(store, result["run_id"])
    (repo_id,) = store.repo_ids()
    metrics = {(split, metric): (value, count) for _, split, metric, value, count in rows}
    for split in ("train", "test"):
        for metric in (
            "replay_pass@1",
            "replay_pass@2",
            "proving_mean_expansions",
            "proving_errors",
            "proving_theorems",
        ):
            assert (split, metric) in metrics, (split, metric)
        assert 0.0 <= metrics[(split, "replay_pass@1")][0] <= metrics[(split, "replay_pass@2")][0] <= 1.0
        assert metrics[(split, "proving_theorems")][0] == 3.0
    assert all(r[0] == repo_id for r in rows)
    # every proof found is in the catalog, named by its checker, and listed in the report
    proofs = read_proofs(store, result["run_id"])
    assert all(p["checker"] == "replay" and p["purpose"] == "evaluation" for p in proofs)
    report = Path(result["report"]).read_text()
    assert "replay_pass@2" in report
    # the closing-tactics baseline is measured beside the model, on the same theorems (issue 17 §4)
    for split in ("train", "test"):
        assert (split, "baseline_replay_pass@2") in metrics and metrics[(split, "baseline_proving_theorems")][0] == 3.0
    per_theorem = read_results(store, result["run_id"])
    assert sorted({(r["prover"], r["split"]) for r in per_theorem}) == [
        (p, s) for p in ("baseline", "model") for s in ("test", "train")
    ]
    assert len(per_theorem) == 12 and all(r["checker"] == "replay" for r in per_theorem)
    assert "## Proving" in report and "baseline [95% CI] (n)" in report
    assert "What these figures are comparable to" in report and "replay: a lower bound" in report
    for p in proofs:
        assert p["full_name"] in report


def test_curriculum_rerun_is_cached_and_records_the_same_metrics(first_run):
    from flows.curriculum import curriculum

    home, first = first_run
    second = curriculum(config=pipeline(home))
    states = task_run_states([second["run_id"]], "prove-batch")
    assert states and all(state == "Cached" for _, state in states)
    store = Store.open(home)
    assert [r[:4] for r in proving_metrics(store, second["run_id"])] == [
        r[:4] for r in proving_metrics(store, first["run_id"])
    ]


# What a Dask worker imports to run a proving batch: the task's module (Prefect with it), the
# checkpoint generator, torch and the tiny model's class (a 2-layer Qwen2, tasks/models/tiny.py).
# About 8 s of CPU per worker process when each is spawned fresh (Dask's default).
WORKER_IMPORTS = [
    "tasks.prefect_tasks.proving",
    "tasks.generate.checkpoint",
    "torch",
    "transformers.models.qwen2.modeling_qwen2",
]


@contextmanager
def dask_workers_forked_from_one_import():
    """Dask's worker processes forked from one forkserver that imported WORKER_IMPORTS once (Dask's
    own test suite starts its workers so: distributed/utils.py `get_mp_context`), instead of each
    spawned worker importing them again. Each worker is still a process of its own, sent the
    pickled tasks over the scheduler's TCP as spawned ones are; the forkserver is a fresh
    interpreter (a module that fails to import there is imported again, and fails, in the worker).
    Dask's statistical profiler of its worker threads (every 10 ms) is off: nothing reads it here."""
    import multiprocessing.forkserver

    import dask
    from distributed.utils import get_mp_context

    settings = {"distributed.worker.multiprocessing-method": "forkserver", "distributed.worker.profile.enabled": False}
    with dask.config.set(settings):
        context = get_mp_context()  # Dask sets its own preload list (distributed...) on first use: ours after it
        context.set_forkserver_preload([*multiprocessing.forkserver._forkserver._preload_modules, *WORKER_IMPORTS])
        try:
            yield
        finally:
            multiprocessing.forkserver._forkserver._stop()  # its imports held no longer than the test


def test_dask_cluster_of_two_processes_gives_the_same_metrics_as_the_default_runner(first_run, tmp_path):
    from prefect_dask import DaskTaskRunner

    from flows.prove import evaluate_proving

    home, result = first_run
    checkpoint = result["steps"][0]["trainers"]["sft"]["checkpoint"]
    settings = ProvingSettings.model_validate(
        {**PROVING, "generator": {"max_new_tokens": 8}, "attempts": 1, "k": 1, "batch_size": 2}
    )
    runs = {}
    for runner in ("default", "dask"):
        runner_home = tmp_path / runner
        store = sample_store(runner_home)  # a store of its own: nothing is served from another run's cache
        repo_ids = [r["repo_id"] for r in store.repositories() if r["name"] == "NatBasics"]
        flow = evaluate_proving
        if runner == "dask":
            flow = evaluate_proving.with_options(
                task_runner=DaskTaskRunner(cluster_kwargs={"n_workers": 2, "threads_per_worker": 1, "processes": True})
            )
        with dask_workers_forked_from_one_import() if runner == "dask" else nullcontext():
            out = flow(home=str(runner_home), checkpoint=checkpoint, repo_ids=repo_ids, settings=settings)
        runs[runner] = sorted(
            (r["repo_id"], r["split"], r["metric"], r["value"])
            for r in out["metrics"]
            if not r["metric"].endswith("proving_mean_seconds")
        )
        runs[runner + "-workers"] = set(out["searched_by"])
    assert runs["dask"] == runs["default"] and runs["default"]
    here = f"{socket.gethostname()}:{os.getpid()}"
    assert runs["default-workers"] == {here}
    assert here not in runs["dask-workers"] and len(runs["dask-workers"]) >= 1  # searched in Dask's worker processes


def test_the_results_card_has_intervals_and_full_provenance_and_names_differing_settings(first_run):
    from typer.testing import CliRunner

    from flows.cli import app
    from tasks.card import card_diff
    from tasks.runs import record_run_start

    home, result = first_run
    run_id = result["run_id"]
    store = Store.open(home)
    card = (Path(home) / "reports" / run_id / "card.md").read_text()  # written by the flow, beside the report
    assert f"run `{run_id}`" in card and "## Proving" in card and "(n=3)" in card
    assert "baseline [95% CI] (n)" in card and "replay: a lower bound" in card
    repo = store.repositories()[0]
    assert repo["url"] in card and repo["commit"] in card  # the snapshot's repositories at their commits
    checkpoint = result["steps"][0]["trainers"]["sft"]["checkpoint"]["checkpoint_id"]
    assert f"`{checkpoint}`" in card and "verifier rule" in card and "Dojoflow" in card and "## How to cite" in card
    # the compute behind the numbers (issue 17 §1): tokens the checkpoint generated in its searches;
    # GPU seconds only where a GPU did the work, never a 0 on a CPU
    tokens = catalog.query(
        store,
        "SELECT sum(tokens) AS t, count(tokens) AS n, count(gpu_seconds) AS g FROM theorem_results"
        " WHERE run_id = $r AND prover = 'model'",
        params={"r": run_id},
    ).to_pylist()[0]
    assert tokens["n"] == 6 and tokens["t"] > 0 and f"{int(round(tokens['t'], 3))} tokens generated" in card
    import torch

    if torch.cuda.is_available():
        assert "GPU seconds (wall seconds of GPU work times GPUs held)" in card
    else:
        assert tokens["g"] == 0 and "no GPU (GPU seconds do not apply)" in card
    printed = CliRunner().invoke(app, ["card", run_id, "--home", str(home)])
    assert printed.exit_code == 0 and f"run `{run_id}`" in printed.output
    # a run whose settings differ is named setting by setting
    config = json.loads(
        catalog.query(store, "SELECT config FROM runs WHERE run_id = $r", params={"r": run_id})[0][0].as_py()
    )
    config["trainers"]["sft"]["training"]["max_steps"] = 99
    record_run_start(store, "run-b", "curriculum", config)
    differences = card_diff(store, run_id, "run-b")
    assert "config.trainers.sft.training.max_steps: 2 -> 99" in differences
    assert card_diff(store, run_id, run_id) == []
    printed = CliRunner().invoke(app, ["card", run_id, "--against", "run-b", "--home", str(home)])
    assert printed.exit_code == 0 and "config.trainers.sft.training.max_steps: 2 -> 99" in printed.output
    assert "environment." not in printed.output  # the same machine and packages: nothing said
