"""`python -m tests.flows.terminal_child run CONFIG --home HOME`: the `dojoflow` command
(`flows.cli.main`) in a child process, with sft's training swapped (a child sees none of the
test process's registrations) so that tests/flows/test_run_terminal.py signals a run on an
event, not on a poll racing the training. Each hook acts only when the test sets its variable:

- STOP_AT_SAVE (a file): real SFT that, once it has saved its first Trainer checkpoint
  (`on_save`, called after the checkpoint folder is written whole), writes that file and waits
  inside the training loop for the test's signal: the signal stops real training at a known
  checkpoint, which the next run resumes from.
- HOLD (a file): no model and no training: sft's train writes that file and waits for the
  test's signal. The run imports no transformers, PEFT or TRL (its home remembers that sft's
  settings passed preflight: tasks/valid_args_memo.py), for a test of what a signal does to a
  run, not to a Trainer.
"""

from __future__ import annotations

import dataclasses
import os
import threading
from pathlib import Path

STOP_AT_SAVE = "DOJOFLOW_TEST_STOP_AT_SAVE"
HOLD = "DOJOFLOW_TEST_HOLD"
MODULE = "tests.flows.terminal_child"  # run as __main__: the trainers name the importable module


def train_sft_stopping_at_first_save(
    settings, snapshot, split_kind, parent_dir, out_dir, work_dir, *, model_cache_dir=None
):
    from transformers import TrainerCallback

    from tasks.sft.train import train_sft

    class WaitAfterFirstSave(TrainerCallback):
        def on_save(self, args, state, control, **kwargs):
            Path(os.environ[STOP_AT_SAVE]).write_text(str(state.global_step))
            threading.Event().wait()  # until the test's SIGINT/SIGTERM raises KeyboardInterrupt here

    return train_sft(
        settings,
        snapshot,
        split_kind,
        parent_dir,
        out_dir,
        work_dir,
        model_cache_dir=model_cache_dir,
        callbacks=[WaitAfterFirstSave()],
    )


def hold_without_training(settings, snapshot, split_kind, parent_dir, out_dir, work_dir, *, model_cache_dir=None):
    Path(os.environ[HOLD]).write_text(str(work_dir))
    threading.Event().wait()  # until the test's signal
    raise AssertionError("a held training never returns")


def register_test_trainings() -> None:
    from tasks.trainers import registry

    for variable, train in ((STOP_AT_SAVE, "train_sft_stopping_at_first_save"), (HOLD, "hold_without_training")):
        if os.environ.get(variable):
            registry.register(dataclasses.replace(registry.get("sft"), train=f"{MODULE}:{train}"))


if __name__ == "__main__":
    register_test_trainings()
    from flows.cli import main

    main()
