"""Training progress as log lines, so the Prefect UI's task run logs show the loss curve.

transformers prints its loss dictionaries to stdout, which reaches only a worker's terminal
(or `dojoflow run`'s log file); log records of loggers under `tasks` go to the task run's logs
too (flows/ui.py). One line per logging step: step, loss and the other logged figures.
"""

from __future__ import annotations

import functools
import logging

log = logging.getLogger("tasks.trainers.progress")

SHOWN_FIRST = ("loss", "reward", "grad_norm", "learning_rate", "eval_loss")


def _figure(value) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def progress_line(step: int, max_steps: int, logs: dict) -> str:
    """`step 3/12: loss 2.31, grad_norm 1.2, ...` (the figures transformers logged at this step)."""
    numbers = {k: v for k, v in logs.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    keys = [k for k in SHOWN_FIRST if k in numbers] + sorted(k for k in numbers if k not in SHOWN_FIRST)
    total = f"/{max_steps}" if max_steps and max_steps > 0 else ""
    return f"step {step}{total}: " + ", ".join(f"{k} {_figure(numbers[k])}" for k in keys)


class ProgressLines:
    """Each of transformers' log events as one log line (Trainer, SFTTrainer, GRPOTrainer)."""

    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs:
            log.info("%s", progress_line(state.global_step, state.max_steps, logs))


def log_training_progress():
    """A transformers TrainerCallback logging `progress_line` at every logging step."""
    return as_trainer_callback(ProgressLines)()


@functools.cache
def as_trainer_callback(cls: type) -> type:
    """`cls` with transformers' TrainerCallback defaults for the events it does not handle;
    made on first use, so that importing this module does not import transformers."""
    from transformers import TrainerCallback

    return type(cls.__name__, (cls, TrainerCallback), {})
