"""A resumable checkpoint every N minutes of training (issue 8, item 4), for the transformers
trainers (SFT, progress) and the Lightning one (retriever): written although the step
interval is never reached, and resumed from.

`checkpoint_every_minutes` is a millionth of a minute here (60 µs, less than any training
step), so every step passes the interval: the tests wait on steps, never on the clock."""

from __future__ import annotations

import pytest

from tasks.progress.config import ProgressSettings
from tasks.sft.config import SFTSettings
from tasks.sft.train import train_sft
from tasks.trainers import registry
from tasks.trainers.time_checkpoints import save_every_minutes
from tests.tasks.test_progress import snapshot, train_progress_  # noqa: F401  (snapshot: a fixture)
from tests.tasks.test_retriever import settings as retriever_settings
from tests.tasks.test_retriever import store_snapshot  # noqa: F401  (a fixture)
from tests.tasks.test_sft import FAST, env  # noqa: F401  (env: a fixture)

EVERY_STEP = 1e-6  # minutes
NEVER = 10_000  # steps: a step interval never reached


class Stop(Exception):
    pass


@pytest.mark.parametrize("name", sorted(registry.trainers()))
def test_every_trainer_has_the_setting_outside_its_checkpoint_id(name):
    """Every registered trainer (GRPO had none: a kill lost up to `save_steps` of generation)."""
    model = registry.get(name).settings
    field = model.model_fields["checkpoint_every_minutes"]
    assert field.default == 10.0 and field.description
    assert field.json_schema_extra["checkpoint_id"] is False
    with pytest.raises(ValueError):
        model(checkpoint_every_minutes=0)


def test_the_callback_saves_once_the_interval_has_passed_and_counts_from_the_last_save():
    from transformers import TrainerControl, TrainerState, TrainingArguments

    now = [0.0]
    callback = save_every_minutes(1.0, clock=lambda: now[0])
    args, state = TrainingArguments(output_dir="unused", report_to=[]), TrainerState()
    callback.on_train_begin(args, state, TrainerControl())
    now[0] = 59.0
    assert not callback.on_step_end(args, state, TrainerControl()).should_save
    now[0] = 60.0
    assert callback.on_step_end(args, state, TrainerControl()).should_save
    callback.on_save(args, state, TrainerControl())  # any checkpoint restarts the count
    now[0] = 100.0
    assert not callback.on_step_end(args, state, TrainerControl()).should_save


def test_sft_writes_a_timed_checkpoint_and_resumes_from_it(env, tmp_path):  # noqa: F811
    from transformers import TrainerCallback

    class CrashAtStep3(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            if state.global_step == 3:
                raise Stop

    settings = SFTSettings(
        training={**FAST, "max_steps": 4, "save_strategy": "steps", "save_steps": NEVER},
        checkpoint_every_minutes=EVERY_STEP,
    )
    with pytest.raises(Stop):
        train_sft(
            settings,
            env["snapshot"],
            "random",
            None,
            tmp_path / "out",
            tmp_path / "work",
            model_cache_dir=env["cache"],
            callbacks=[CrashAtStep3()],
        )
    assert (tmp_path / "work" / "trainer" / "checkpoint-2" / "trainer_state.json").is_file()

    resumed = train_sft(
        settings, env["snapshot"], "random", None, tmp_path / "out", tmp_path / "work", model_cache_dir=env["cache"]
    )
    assert resumed["resumed_from"] == "checkpoint-2" and resumed["steps"] == 4


def test_progress_writes_timed_checkpoints_and_resumes_from_them(snapshot, tmp_path):  # noqa: F811
    settings = ProgressSettings(
        max_seq_len=96,
        max_eval_examples=10,
        checkpoint_every_minutes=EVERY_STEP,
        training={"max_steps": 2, "per_device_train_batch_size": 8, "save_steps": NEVER, "logging_steps": 1},
    )
    first = train_progress_(settings, snapshot, None, tmp_path / "out", tmp_path / "work")
    assert first["resumed_from"] is None
    assert (tmp_path / "work" / "trainer" / "checkpoint-1").is_dir()
    longer = settings.model_copy(update={"training": {**settings.training, "max_steps": 3}})
    again = train_progress_(longer, snapshot, None, tmp_path / "out2", tmp_path / "work")
    assert again["resumed_from"] == "checkpoint-2" and again["global_step"] == 3


def test_retriever_writes_a_timed_checkpoint_mid_epoch_and_resumes_from_it(
    store_snapshot,
    tmp_path,  # noqa: F811
    monkeypatch,
):
    import pytorch_lightning as pl
    import torch

    from tasks.retriever import train_retriever

    snap, tmp = store_snapshot
    s = retriever_settings(
        {"max_steps": 3},
        model_cache_dir=str(tmp / "models"),
        fisher_examples=0,
        batch_size=4,
        checkpoint_every_n_steps=NEVER,
        checkpoint_every_minutes=EVERY_STEP,
    )
    save = pl.Trainer.save_checkpoint

    def save_then_stop(trainer, *args, **kwargs):
        save(trainer, *args, **kwargs)
        if trainer.global_step == 2:
            raise Stop

    monkeypatch.setattr(pl.Trainer, "save_checkpoint", save_then_stop)
    with pytest.raises(Stop):
        train_retriever(s, snap, "random", None, tmp_path / "out", tmp_path / "work")
    monkeypatch.undo()
    ckpt = torch.load(tmp_path / "work" / "checkpoints" / "last.ckpt", weights_only=True)
    assert ckpt["global_step"] == 2  # step interval never reached, epoch not over: the timed checkpoint

    resumed = train_retriever(s, snap, "random", None, tmp_path / "out", tmp_path / "work")
    assert resumed["resumed"] is True and resumed["global_step"] == 3


DDP_CASES = [([60.0, 0.0], True), ([0.0, 60.0], False)]


@pytest.fixture(scope="module")
def ddp_saves(tmp_path_factory) -> dict:
    """Whether each rank of a 2-process gloo group saves, per case of DDP_CASES: one spawn for all."""
    import json
    import socket

    import torch.multiprocessing as mp

    from tests.distributed_clock import rank_main

    out = tmp_path_factory.mktemp("ddp")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cases = [seconds for seconds, _ in DDP_CASES]
    mp.spawn(rank_main, args=(port, str(out), cases), nprocs=2, join=True)
    by_rank = [json.loads((out / f"rank{r}.json").read_text()) for r in (0, 1)]
    return {tuple(seconds): [by_rank[0][i], by_rank[1][i]] for i, seconds in enumerate(cases)}


@pytest.mark.parametrize("seconds_by_rank, saves", DDP_CASES)
def test_under_ddp_every_rank_saves_when_rank_0s_clock_says_so(ddp_saves, seconds_by_rank, saves):
    """Each rank reads its own clock; one rank saving while another trains on would hang the job
    (the Trainer's save has collectives): every rank follows rank 0."""
    assert ddp_saves[tuple(seconds_by_rank)] == [saves, saves]
