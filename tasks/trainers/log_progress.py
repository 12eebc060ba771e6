"""Training progress as log lines, so the Prefect UI's task run logs show the loss curve and
`dojoflow run`'s terminal display shows optimizer steps, the loss and the time left.

transformers prints its loss dictionaries to stdout, which reaches only a worker's terminal
(or `dojoflow run`'s log file); log records of loggers under `tasks` go to the task run's logs
too (flows/ui.py). One line per logging step: step, loss and the other logged figures, and an
estimate of the time left; between logging steps, one every `QUIET_S` seconds at most.

Each record carries the figures as data too (`PROGRESS_FIELD`: a `TrainingProgress` as a
dict), which a launched worker sends along with the line (tasks/trainers/worker.py) and the
supervisor puts back (supervise.py), so the terminal display reads them the same way whether
training ran in this process or in a child (flows/ui.py, flows/cli/terminal.py).
"""

from __future__ import annotations

import functools
import logging
import math
import time
from collections.abc import Callable

from pydantic import BaseModel, ConfigDict

log = logging.getLogger("tasks.trainers.progress")

SHOWN_FIRST = ("loss", "reward", "grad_norm", "learning_rate", "eval_loss")
PROGRESS_FIELD = "training_progress"  # the LogRecord attribute (and worker JSON key) with the figures
QUIET_S = 30.0  # between logging steps, a progress record at most this often


class TrainingProgress(BaseModel):
    """Where a training run is: optimizer steps done of the total, the latest loss, the time left."""

    model_config = ConfigDict(frozen=True)

    step: int
    total: int | None = None
    loss: float | None = None
    seconds_left: float | None = None


def _figure(value) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def duration(seconds: float) -> str:
    """`45s`, `3m05s`, `2h04m`."""
    s = max(0, round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def progress_line(step: int, max_steps: int, logs: dict, seconds_left: float | None = None) -> str:
    """`step 3/12: loss 2.31, grad_norm 1.2, ...; about 1m05s left` (the figures transformers
    logged at this step, and the estimate when there is one)."""
    numbers = {k: v for k, v in logs.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    keys = [k for k in SHOWN_FIRST if k in numbers] + sorted(k for k in numbers if k not in SHOWN_FIRST)
    total = f"/{max_steps}" if max_steps and max_steps > 0 else ""
    line = f"step {step}{total}"
    if keys:
        line += ": " + ", ".join(f"{k} {_figure(numbers[k])}" for k in keys)
    if seconds_left is not None:
        line += f"; about {duration(seconds_left)} left"
    return line


class ProgressClock:
    """The figures of one training run and the time left, estimated from the steps this
    process did so far (a resumed run's earlier steps do not count)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self.clock = clock
        self.start: tuple[float, int] | None = None
        self.last_emit = -math.inf
        self.last_step = -1
        self.loss: float | None = None

    def begin(self, step: int) -> None:
        self.start = (self.clock(), step)
        self.last_emit = self.start[0]  # a quiet record only after `QUIET_S` without one

    def seconds_left(self, step: int, total: int | None) -> float | None:
        if self.start is None:
            self.begin(step)
            return None
        began, first = self.start
        if not total or total <= 0 or step <= first:
            return None
        return (self.clock() - began) / (step - first) * max(total - step, 0)

    def emit(self, step: int, total: int | None, logs: dict | None = None, *, quiet: bool = False) -> None:
        """Log one progress record; with `quiet`, only when `QUIET_S` passed since the last one."""
        if quiet and (step == self.last_step or self.clock() - self.last_emit < QUIET_S):
            return
        logs = logs or {}
        loss = next((logs[k] for k in ("loss", "train_loss") if isinstance(logs.get(k), (int, float))), None)
        if loss is not None:
            self.loss = float(loss)
        left = self.seconds_left(step, total)
        total = total if total and total > 0 else None
        figures = TrainingProgress(step=step, total=total, loss=self.loss, seconds_left=left)
        self.last_emit, self.last_step = self.clock(), step
        extra = {PROGRESS_FIELD: figures.model_dump()}
        log.info("%s", progress_line(step, total or 0, logs, left), extra=extra)


class ProgressLines:
    """transformers' events as progress records (Trainer, SFTTrainer, GRPOTrainer): every
    log event, and between them one every `QUIET_S` seconds at most."""

    def __init__(self) -> None:
        self.clock = ProgressClock()

    def on_train_begin(self, args, state, control, **kwargs):
        self.clock.begin(getattr(state, "global_step", 0))

    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs and getattr(state, "is_world_process_zero", True):
            self.clock.emit(state.global_step, state.max_steps, logs)

    def on_step_end(self, args, state, control, **kwargs):
        if getattr(state, "is_world_process_zero", True):
            self.clock.emit(state.global_step, state.max_steps, quiet=True)


def log_training_progress():
    """A transformers TrainerCallback logging `progress_line` at every logging step."""
    return as_trainer_callback(ProgressLines)()


@functools.cache
def as_trainer_callback(cls: type) -> type:
    """`cls` with transformers' TrainerCallback defaults for the events it does not handle;
    made on first use, so that importing this module does not import transformers."""
    from transformers import TrainerCallback

    return type(cls.__name__, (cls, TrainerCallback), {})


def lightning_progress(loss_key: str = "train/loss"):
    """A Lightning callback logging the same progress records (the retriever): at every
    `log_every_n_steps` optimizer steps and the last one, and every `QUIET_S` seconds between."""
    from pytorch_lightning.callbacks import Callback

    class LightningProgress(Callback):
        def __init__(self) -> None:
            self.clock = ProgressClock()

        def on_train_start(self, trainer, pl_module) -> None:
            self.clock.begin(trainer.global_step)

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
            if not trainer.is_global_zero:
                return
            step, total = trainer.global_step, _lightning_total(trainer)
            loss = trainer.callback_metrics.get(loss_key)
            logs = {"loss": float(loss)} if loss is not None else {}
            every = max(int(getattr(trainer, "log_every_n_steps", 1) or 1), 1)
            logged = step != self.clock.last_step and (step % every == 0 or step == total)
            self.clock.emit(step, total, logs, quiet=not logged)

    return LightningProgress()


def _lightning_total(trainer) -> int | None:
    if trainer.max_steps and trainer.max_steps > 0:
        return int(trainer.max_steps)
    total = trainer.estimated_stepping_batches
    return int(total) if isinstance(total, (int, float)) and math.isfinite(total) else None
