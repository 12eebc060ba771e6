"""GRPO says when a step had nothing to learn from (every group's completions got one reward)."""

from __future__ import annotations

import logging
from types import SimpleNamespace

from tasks.grpo.signal_watch import learning_signal_watch, steps_without_signal


def test_the_watch_logs_the_share_per_step_and_warns_when_no_group_had_variance(caplog):
    watch = learning_signal_watch()
    with caplog.at_level(logging.INFO, logger="tasks.grpo.train"):
        watch.on_log(None, SimpleNamespace(global_step=1), None, logs={"frac_reward_zero_std": 0.5})
        watch.on_log(None, SimpleNamespace(global_step=2), None, logs={"frac_reward_zero_std": 1.0})
        watch.on_log(None, SimpleNamespace(global_step=2), None, logs={"train_runtime": 3.0})  # the final summary
    assert (watch.steps_seen, watch.steps_without_signal) == (2, 1)
    messages = [(r.levelname, r.getMessage()) for r in caplog.records]
    assert ("INFO", "step 1: 50% of groups had no reward variance") in messages
    assert any(level == "WARNING" and m.startswith("step 2: 100% of groups") for level, m in messages), messages


def test_steps_without_signal_counts_history_entries_at_one():
    history = [
        {"frac_reward_zero_std": 1.0},
        {"frac_reward_zero_std": 0.25},
        {"loss": 0.0},
        {"frac_reward_zero_std": 1},
    ]
    assert steps_without_signal(history) == 2


def test_training_progress_lines_put_the_loss_first_and_count_steps(caplog):
    from tasks.trainers.log_progress import log_training_progress, progress_line

    assert progress_line(3, 12, {"grad_norm": 1.25, "loss": 2.3125, "epoch": 0.5, "note": "x"}) == (
        "step 3/12: loss 2.312, grad_norm 1.25, epoch 0.5"
    )
    assert progress_line(3, -1, {"loss": 1.0}) == "step 3: loss 1"
    callback = log_training_progress()
    with caplog.at_level(logging.INFO, logger="tasks.trainers.progress"):
        callback.on_log(None, SimpleNamespace(global_step=2, max_steps=4), None, logs={"loss": 0.5})
        callback.on_train_begin(None, None, None)  # transformers' other events are no-ops
    assert [r.getMessage() for r in caplog.records] == ["step 2/4: loss 0.5"]
