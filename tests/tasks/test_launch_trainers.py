"""Each trainer in torchrun's processes (tasks/trainers/worker.py) against one process, the global
batch and seed the same: the progress model (transformers Trainer), the retriever (Lightning DDP,
gloo; its EWC Fisher computed on rank 0 after training). GRPO: test_launch_grpo_shards.py.

SFT's equality, resume and stopping tests are in tests/test_launch.py; tolerances are stated there.
Real torchrun on CPU, tiny models, a handful of steps each.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tasks.trainers.launch import LaunchSettings
from tasks.trainers.registry import get
from tasks.trainers.supervise import train_in_child
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


def _train(trainer: str, settings, snapshot, root: Path, name: str, processes: int | None, cache=None) -> tuple:
    """(out, work, figures) of one step of `trainer`; processes None: inside this process."""
    out, work = root / name, root / f"work-{name}"
    if processes is None:  # the curriculum's in-process default (launch settings left at their defaults)
        from tasks.checkpoints import _train_into

        home = root / f"home-{name}"  # in-process training builds builtin models in <home>/models
        figures = _train_into(get(trainer), home, settings, snapshot, "random", None, out, work)[0]
    else:
        figures = train_in_child(
            trainer,
            settings,
            snapshot,
            "random",
            None,
            out,
            work,
            model_cache_dir=cache,
            launch=LaunchSettings(processes=processes),
        )
    return out, work, figures


# -- the progress model --------------------------------------------------------------------------
def test_the_progress_model_in_two_processes_trains_what_one_process_trains(tmp_path):
    """And in one child process it trains, to the bit, what it trains in this process (the
    in-process default, tasks/trainers/launch.py `in_process`)."""
    snapshot = write_snapshot(tmp_path / "store", {"train": training_proofs("repoA", 8)})  # 40 rows: 5 batches of 8

    model = no_dropout("builtin:tiny-encoder", tmp_path / "models", tmp_path / "encoder")

    def settings(per_device: int):
        return tiny_settings(
            max_steps=3, per_device_train_batch_size=per_device, save_steps=3, logging_steps=1, disable_tqdm=True
        ).model_copy(update={"model": model})

    one = _train("progress", settings(8), snapshot, tmp_path, "one", None)
    child = _train("progress", settings(8), snapshot, tmp_path, "child", 1)
    assert child[2]["world_size"] == 1 and _losses(child[1]) == _losses(one[1])
    _assert_identical(child[0], one[0])
    two = _train("progress", settings(4), snapshot, tmp_path, "two", 2)
    assert two[2]["world_size"] == 2  # a silent fall back to one process cannot pass
    assert _losses(two[1]) == pytest.approx(_losses(one[1]), abs=ATOL, rel=RTOL)
    _assert_close(_weights(two[0]), _weights(one[0]))


# -- the retriever (Lightning) ----------------------------------------------------------------------
def test_the_retriever_in_two_processes_equals_one_process_accumulating_two_batches(store_snapshot, tmp_path):  # noqa: F811
    """Rank r trains batches r, r+2, ... (`EpochOrder`), so one DDP step of 2 x 4 is one step of a
    single process accumulating batches 2k and 2k+1: the same examples, the same in-batch
    negatives. The Fisher for the next step's EWC is computed on rank 0 from the final weights.
    One child process trains, to the bit, what this process trains (the in-process default)."""
    snap, tmp = store_snapshot

    def settings(accumulate: int):
        return retriever_settings(
            {"max_steps": 3, "accumulate_grad_batches": accumulate},
            backbone=no_dropout("builtin:tiny-encoder", tmp / "models", tmp_path / f"encoder-{accumulate}"),
            model_cache_dir=str(tmp / "models"),
            batch_size=4,
            fisher_examples=8,
            checkpoint_every_n_steps=3,
        )

    accumulating = settings(2)
    one = _train("retriever", accumulating, snap, tmp_path, "one", None)
    child = _train("retriever", accumulating, snap, tmp_path, "child", 1)
    assert child[2]["world_size"] == 1 and child[2]["global_step"] == 3
    _assert_identical(child[0], one[0])
    two = _train("retriever", settings(1), snap, tmp_path, "two", 2)
    assert two[2]["world_size"] == 2 and two[2]["global_step"] == one[2]["global_step"] == 3
    _assert_close(_weights(two[0]), _weights(one[0]))
    from safetensors.torch import load_file

    _assert_close(load_file(two[0] / "fisher.safetensors"), load_file(one[0] / "fisher.safetensors"))
    assert two[2]["fisher_examples"] == one[2]["fisher_examples"] == 8


# GRPO in 2 processes against 1: tests/tasks/test_launch_grpo_shards.py (what is compared, and why not the weights).
