"""`python -m tests.flows.cli_child run CONFIG --home HOME`: the `dojoflow` command
(`flows.cli.main`) in a child process, with test trainers registered first. A child sees
none of the test process's registrations; tests/flows/test_curriculum.py's subprocess
tests start their runs through this module. Each hook below acts only when the test set its
environment variable.

- MEET (a folder): the torch-free `echo` trainer (tests/echo_trainer.py, from its own
  previous checkpoint), whose training of a step waits until the other `dojoflow run` on the
  same home has reached that step too: it waits for the lock this run holds (the
  lock manager logs that wait, tasks/prefect_locking.py), or it is training the same step
  (which a missing lock would allow). So two runs started at once meet at every step
  however the box schedules their start, and a step trained twice shows. A run that has
  imported torch by then leaves `torch-imported.<pid>` (the run needs none).
- PAUSE (a file): real SFT whose training, at a step of two or more repositories, writes
  that file after it saved its first Trainer checkpoint (a transformers `TrainerCallback`,
  called once `trainer_state.json` is written) and then waits to be killed: the kill of
  the resume test lands mid-training on an event, not on a race with the remaining steps.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import sys
import threading
import time
from pathlib import Path

MEET = "DOJOFLOW_TEST_MEET"
PAUSE = "DOJOFLOW_TEST_PAUSE"
MODULE = "tests.flows.cli_child"  # run as __main__: the trainers name the importable module
CEILING_S = 1800  # a wait longer than this is a hang (the test's own ceiling)


# -- MEET: two runs at the same step --------------------------------------------------------------
class _WaitsSeen(logging.Handler):
    """Writes `waiting.<pid>.<n>` holding the lock key this process waits for."""

    def __init__(self, folder: Path):
        super().__init__(logging.INFO)
        self.folder, self.count = folder, 0

    def emit(self, record: logging.LogRecord) -> None:
        if str(record.msg).startswith("waiting for another run") and record.args:
            self.count += 1
            marker = self.folder / f"waiting.{os.getpid()}.{self.count}"
            marker.with_suffix(".tmp").write_text(str(record.args[0]))
            marker.with_suffix(".tmp").rename(marker)


def _held_lock_keys() -> set[str]:
    """The step locks this process holds: the flock lock manager keeps each one's file open."""
    keys = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if f"{os.sep}prefect{os.sep}locks{os.sep}" in target and target.endswith(".lock"):
            keys.add(Path(target).name.removesuffix(".lock"))
    return keys


def _other_run_is_here(folder: Path, snapshot_id: str) -> bool:
    me = str(os.getpid())
    if any(p.name.split(".")[-1] != me for p in folder.glob(f"training.{snapshot_id}.*")):
        return True  # it trains this step too
    held = _held_lock_keys()
    return any(
        p.name.split(".")[1] != me and p.read_text() in held for p in folder.glob("waiting.*") if p.suffix != ".tmp"
    )


def meeting_echo_train(settings, snapshot, split_kind, parent_dir, out_dir, work_dir, *, model_cache_dir):
    from tests.echo_trainer import echo_train

    folder = Path(os.environ[MEET])
    if "torch" in sys.modules:  # a torch-free trainer's run has no reason to pay for torch's import
        (folder / f"torch-imported.{os.getpid()}").touch()
    (folder / f"training.{snapshot.snapshot_id}.{os.getpid()}").touch()
    deadline = time.monotonic() + CEILING_S
    while not _other_run_is_here(folder, snapshot.snapshot_id):
        if time.monotonic() > deadline:
            raise RuntimeError(f"the other run never reached the step of snapshot {snapshot.snapshot_id}")
        time.sleep(0.05)
    return echo_train(settings, snapshot, split_kind, parent_dir, out_dir, work_dir, model_cache_dir=model_cache_dir)


# -- PAUSE: a kill after the first Trainer checkpoint ----------------------------------------------
def train_sft_pausing(settings, snapshot, split_kind, parent_dir, out_dir, work_dir, *, model_cache_dir=None):
    from transformers import TrainerCallback

    from tasks.sft.train import train_sft

    class PauseAfterFirstSave(TrainerCallback):
        def on_save(self, args, state, control, **kwargs):
            Path(os.environ[PAUSE]).write_text(str(state.global_step))
            threading.Event().wait()  # until the test kills this run

    pause = [PauseAfterFirstSave()] if len(snapshot.repo_ids) >= 2 else []
    return train_sft(
        settings, snapshot, split_kind, parent_dir, out_dir, work_dir, model_cache_dir=model_cache_dir, callbacks=pause
    )


def register_test_trainers() -> None:
    from tasks.trainers import registry

    if os.environ.get(MEET):
        from tests.echo_trainer import ECHO

        registry.register(dataclasses.replace(ECHO, starts_from=None, train=f"{MODULE}:meeting_echo_train"))
        waits = logging.getLogger("tasks.prefect_locking")
        waits.setLevel(logging.INFO)
        waits.addHandler(_WaitsSeen(Path(os.environ[MEET])))
    if os.environ.get(PAUSE):
        registry.register(dataclasses.replace(registry.get("sft"), train=f"{MODULE}:train_sft_pausing"))


if __name__ == "__main__":
    register_test_trainers()
    from flows.cli import main

    main()
