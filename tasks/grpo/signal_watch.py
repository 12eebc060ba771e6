"""Say when GRPO has nothing to learn from.

A group whose completions all get the same reward has advantage 0 for every completion: it
contributes no gradient (DAPO's dynamic sampling drops it). TRL logs the share of such groups
per step as `frac_reward_zero_std`. When it is 1, the step learned nothing: typically an
untrained model whose proofs all fail, or theorems the reward backend cannot check. Without
this, such a run trains for minutes with loss 0 and ends as if it had worked.
"""

from __future__ import annotations

import logging

from tasks.trainers.log_progress import as_trainer_callback

log = logging.getLogger("tasks.grpo.train")

NO_SIGNAL_HINT = (
    "every group's completions got the same reward, so the step learned nothing; typical causes: "
    "an untrained model whose proofs all fail (give -m / model:), or theorems the backend cannot check"
)


class SignalWatch:
    """Logs, at each logged step, the share of groups with no reward variance; warns at 100%."""

    def __init__(self) -> None:
        self.steps_without_signal = 0
        self.steps_seen = 0

    def on_log(self, args, state, control, logs=None, **kwargs):
        share = (logs or {}).get("frac_reward_zero_std")
        if share is None:
            return
        self.steps_seen += 1
        if share >= 1.0:
            self.steps_without_signal += 1
            log.warning("step %d: 100%% of groups had no reward variance: %s", state.global_step, NO_SIGNAL_HINT)
        else:
            log.info("step %d: %.0f%% of groups had no reward variance", state.global_step, 100 * share)


def learning_signal_watch():
    """A transformers TrainerCallback running `SignalWatch`."""
    return as_trainer_callback(SignalWatch)()


def steps_without_signal(history: list[dict]) -> int:
    """Steps of a finished run (`grpo_history.json` entries) where no group had reward variance."""
    return sum(1 for h in history if h.get("frac_reward_zero_std", 0.0) >= 1.0)
