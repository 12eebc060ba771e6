"""A resumable checkpoint every N minutes of training, for every trainer (issue 8, item 4).

Step intervals alone (`save_steps`, `checkpoint_every_n_steps`: hundreds of steps) let a
kill late in a long step lose all of it. Each trainer's settings carry
`checkpoint_every_minutes` (default 10; `CHECKPOINT_EVERY_MINUTES_FIELD`), and its train
function adds the callback below for its library:

- transformers Trainers (SFT, progress, GRPO): `save_every_minutes`, which asks the Trainer
  for its usual checkpoint (`control.should_save`) once that much time has passed since
  training started or since the last checkpoint, whatever triggered it;
- Lightning (retriever): `lightning_time_checkpoint`, a callback that writes the same
  `last.ckpt` the step checkpoints write.

Either checkpoint is the one a rerun resumes from; the time is wall-clock time of this
process, so how often depends on the machine, never on the weights. See docs/resume.md.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from pathlib import Path

from pydantic import Field

DEFAULT_MINUTES = 10.0


def checkpoint_every_minutes_field():
    """The settings field, declared the same way on every trainer's settings model."""
    return Field(
        DEFAULT_MINUTES,
        gt=0,
        description="Also write a resumable checkpoint every this many minutes of training (besides the step "
        "interval), so a kill loses at most that much work. Cannot change the weights.",
        json_schema_extra={"checkpoint_id": False},  # tasks/checkpoints.py: not part of the checkpoint id
    )


def save_every_minutes(minutes: float, clock: Callable[[], float] = time.monotonic):
    """A transformers TrainerCallback that makes the Trainer save a checkpoint every `minutes`
    of training. `clock`: seconds, monotonic."""
    return _save_every_minutes_class()(minutes, clock)


@functools.cache
def _save_every_minutes_class():
    # Defined on first use: settings models import this module, and must not import transformers.
    from transformers import TrainerCallback

    class SaveEveryMinutes(TrainerCallback):
        def __init__(self, minutes: float, clock: Callable[[], float]):
            self.seconds = minutes * 60.0
            self.clock = clock
            self._last = clock()

        def on_train_begin(self, args, state, control, **kwargs):
            self._last = self.clock()

        def on_step_end(self, args, state, control, **kwargs):
            if rank_zero_decides(self.clock() - self._last >= self.seconds, args.device):
                control.should_save = True
            return control

        def on_save(self, args, state, control, **kwargs):
            self._last = self.clock()

    return SaveEveryMinutes


def rank_zero_decides(due: bool, device=None) -> bool:
    """Rank 0's `due` on every rank of a torch.distributed job (a scalar broadcast per step); `due`
    itself in one process. Each rank reads its own clock, so without this one rank could save a
    checkpoint (whose writing has collectives: the Trainer gathers its FLOPs, Lightning waits at a
    barrier) while another trains on: the job would hang (tests/tasks/test_time_checkpoints.py)."""
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return due
    import torch

    flag = torch.tensor([1 if due else 0], device=device if dist.get_backend() == "nccl" else "cpu")
    dist.broadcast(flag, src=0)
    return bool(flag.item())


def lightning_time_checkpoint(dirpath: str | Path, minutes: float):
    """A Lightning callback that writes `dirpath/last.ckpt` every `minutes` of training.

    Not Lightning's `ModelCheckpoint(train_time_interval=...)`: beside the step checkpoint it
    also writes `last.ckpt` at every epoch end, including the early end of a `max_steps`
    stop, which records the epoch as finished, so a later run with a larger `max_steps`
    trained nothing. List it after callbacks whose state must count the batch (ExactResume).
    """
    from pytorch_lightning.callbacks import Callback

    class SaveEveryMinutes(Callback):
        def __init__(self) -> None:
            self.path, self.seconds, self.last = Path(dirpath) / "last.ckpt", minutes * 60.0, None

        def on_train_start(self, trainer, pl_module) -> None:
            self.last = time.monotonic()

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
            if trainer.strategy.broadcast(time.monotonic() - self.last >= self.seconds, src=0):  # rank 0's clock
                trainer.save_checkpoint(self.path)
                self.last = time.monotonic()

    return SaveEveryMinutes()
