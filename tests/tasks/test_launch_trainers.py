"""Each trainer in torchrun's processes (tasks/trainers/worker.py) against one process, the global
batch and seed the same: the progress model (transformers Trainer), the retriever (Lightning DDP,
gloo; its EWC Fisher computed on rank 0 after training). GRPO: test_launch_grpo_shards.py.

SFT's equality, resume and stopping tests are in tests/test_launch.py; tolerances are stated there.
Real torchrun on CPU, tiny models, a handful of steps each. Both trainers' steps share each launch
(one of 1 process, one of 2: `launched`): the worker's own `run` trains one job after the other
(tests/tasks/launch_probe.py), so each process imports torch and transformers once; the progress
model trains first in each process, as in this one.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tasks.trainers.launch import LaunchSettings
from tasks.trainers.registry import get
from tasks.trainers.supervise import call_in_child
from tests.tasks.test_launch import ATOL, RTOL, _assert_close, _losses, _weights
from tests.tasks.test_progress import tiny_settings, training_proofs, write_snapshot
from tests.tasks.test_retriever import settings as retriever_settings
from tests.tasks.test_retriever import store_snapshot  # noqa: F401  (a fixture)

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _one_thread(monkeypatch):
    """The children get OMP_NUM_THREADS=1. This process is put where a pytest worker that computed
    before this fixture is (CI at a49ca2d): torch's pool sized by other means (here 2 threads, what
    OpenMP takes on a 2-core machine), which the in-process default must not train with."""
    import torch

    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(before)


def no_dropout(builtin: str, cache: Path, dest: Path) -> str:
    """A copy of a builtin model with every dropout probability 0: with dropout each rank draws its
    own masks (equal in distribution to one process's, not in value), so equality needs none."""
    import shutil

    from tasks.models import resolve_model

    shutil.copytree(resolve_model(builtin, cache), dest)
    config = json.loads((dest / "config.json").read_text())
    config.update({k: 0.0 for k, v in config.items() if "dropout" in k and isinstance(v, float)})
    (dest / "config.json").write_text(json.dumps(config))
    return str(dest)


def _assert_identical(a: Path, b: Path) -> None:
    """The weights in two checkpoint folders equal to the bit."""
    ours, theirs = _weights(a), _weights(b)
    assert ours.keys() == theirs.keys()
    different = [k for k in ours if not bool((ours[k] == theirs[k]).all())]
    worst = max((float((ours[k].double() - theirs[k].double()).abs().max()) for k in different), default=0.0)
    assert not different, f"{len(different)} tensors differ, by up to {worst}"


def _train(trainer: str, settings, snapshot, root: Path, name: str) -> tuple:
    """(out, work, figures) of one step of `trainer` inside this process (the curriculum's in-process
    default, launch settings left at their defaults)."""
    from tasks.checkpoints import _train_into

    out, work = root / name, root / f"work-{name}"
    home = root / f"home-{name}"  # in-process training builds builtin models in <home>/models
    figures = _train_into(get(trainer), home, settings, snapshot, "random", None, out, work)[0]
    return out, work, figures


def _launch_together(steps: dict, root: Path, name: str, processes: int) -> dict:
    """Each trainer's step of `steps` ({trainer: (settings, snapshot, model cache)}) in torchrun's
    `processes`, all in one launch (`call_in_child`; tests/tasks/launch_probe.py runs each trainer's
    job with the worker's own `run`, as `train_in_child` of that step alone would): {trainer: (out,
    work, figures)}, the figures from the result rank 0 wrote."""
    from tasks.trainers.supervise import Output, outcome
    from tasks.trainers.worker import Job

    jobs, done = [], {}
    for trainer, (settings, snapshot, cache) in steps.items():
        out, work = root / f"{trainer}-{name}", root / f"{trainer}-work-{name}"
        jobs.append(
            Job(
                trainer=trainer,
                settings=settings.model_dump(mode="json"),
                snapshot=snapshot.to_dict(),
                split_kind="random",
                out_dir=str(out),
                work_dir=str(work),
                model_cache_dir=str(cache) if cache is not None else None,
                result_file=str(work / "launch" / "result.json"),
            )
        )
        done[trainer] = (out, work)
    with pytest.MonkeyPatch.context() as mp:  # a module fixture runs before the autouse `_one_thread`
        mp.setenv("OMP_NUM_THREADS", "1")
        mp.setenv("HF_HUB_OFFLINE", "1")
        figures = call_in_child(
            "progress+retriever",
            "tests.tasks.launch_probe:run_jobs",
            {"jobs": [job.model_dump(mode="json") for job in jobs]},
            root / name,
            root / f"work-{name}",
            launch=LaunchSettings(processes=processes),
        )
    assert figures["codes"] == [0] * len(jobs) and figures["world_size"] == processes
    return {t: (*done[t], outcome(t, 0, Path(job.result_file), Output())) for t, job in zip(done, jobs)}


@pytest.fixture(scope="module")
def steps(store_snapshot, tmp_path_factory):  # noqa: F811
    """Both trainers' settings, as (1-process settings, 2-process settings, snapshot, model cache):
    the progress model on 40 rows (5 batches of 8) with 3 steps of 8 (1 process) or 2 x 4; the
    retriever with 3 steps of 2 accumulated batches of 4 (1 process) or 2 x 4."""
    root = tmp_path_factory.mktemp("launch-trainers")
    snapshot = write_snapshot(root / "store", {"train": training_proofs("repoA", 8)})  # 40 rows: 5 batches of 8
    model = no_dropout("builtin:tiny-encoder", root / "models", root / "encoder")

    def progress(per_device: int):
        return tiny_settings(
            max_steps=3, per_device_train_batch_size=per_device, save_steps=3, logging_steps=1, disable_tqdm=True
        ).model_copy(update={"model": model})

    snap, tmp = store_snapshot

    def retriever(accumulate: int):
        return retriever_settings(
            {"max_steps": 3, "accumulate_grad_batches": accumulate},
            backbone=no_dropout("builtin:tiny-encoder", tmp / "models", root / f"encoder-{accumulate}"),
            model_cache_dir=str(tmp / "models"),
            batch_size=4,
            fisher_examples=8,
            checkpoint_every_n_steps=3,
        )

    return {
        "root": root,
        "progress": (progress(8), progress(4), snapshot, None),
        "retriever": (retriever(2), retriever(1), snap, None),
    }


@pytest.fixture(scope="module")
def launched(steps) -> dict:
    """Both trainers' steps in one child process (one launch), then in two (one launch): {processes:
    {trainer: (out, work, figures)}}."""
    one = {t: (steps[t][0], steps[t][2], steps[t][3]) for t in TRAINERS}
    two = {t: (steps[t][1], steps[t][2], steps[t][3]) for t in TRAINERS}
    return {1: _launch_together(one, steps["root"], "child", 1), 2: _launch_together(two, steps["root"], "two", 2)}


TRAINERS = ("progress", "retriever")


# -- the progress model --------------------------------------------------------------------------
def test_the_progress_model_in_two_processes_trains_what_one_process_trains(steps, launched, tmp_path):
    """And in one child process it trains, to the bit, what it trains in this process (the
    in-process default, tasks/trainers/launch.py `in_process`)."""
    settings, _, snapshot, _ = steps["progress"]
    one = _train("progress", settings, snapshot, tmp_path, "one")
    child = launched[1]["progress"]
    assert child[2]["world_size"] == 1 and _losses(child[1]) == _losses(one[1])
    _assert_identical(child[0], one[0])
    two = launched[2]["progress"]
    assert two[2]["world_size"] == 2  # a silent fall back to one process cannot pass
    assert _losses(two[1]) == pytest.approx(_losses(one[1]), abs=ATOL, rel=RTOL)
    _assert_close(_weights(two[0]), _weights(one[0]))


# -- the retriever (Lightning) ----------------------------------------------------------------------
def test_the_retriever_in_two_processes_equals_one_process_accumulating_two_batches(steps, launched, tmp_path):
    """Rank r trains batches r, r+2, ... (`EpochOrder`), so one DDP step of 2 x 4 is one step of a
    single process accumulating batches 2k and 2k+1: the same examples, the same in-batch
    negatives. The Fisher for the next step's EWC is computed on rank 0 from the final weights.
    One child process trains, to the bit, what this process trains (the in-process default)."""
    accumulating, _, snap, _ = steps["retriever"]
    one = _train("retriever", accumulating, snap, tmp_path, "one")
    child = launched[1]["retriever"]
    assert child[2]["world_size"] == 1 and child[2]["global_step"] == 3
    _assert_identical(child[0], one[0])
    two = launched[2]["retriever"]
    assert two[2]["world_size"] == 2 and two[2]["global_step"] == one[2]["global_step"] == 3
    _assert_close(_weights(two[0]), _weights(one[0]))
    from safetensors.torch import load_file

    _assert_close(load_file(two[0] / "fisher.safetensors"), load_file(one[0] / "fisher.safetensors"))
    assert two[2]["fisher_examples"] == one[2]["fisher_examples"] == 8


# GRPO in 2 processes against 1: tests/tasks/test_launch_grpo_shards.py (what is compared, and why not the weights).
