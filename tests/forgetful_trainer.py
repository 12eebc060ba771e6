"""A test trainer that forgets: every repository scores top1_accuracy 0.9 [0.83, 0.95] at the step
it is learned (evaluated alone) and 0.2 [0.13, 0.29] once a later repository is learned, so a
two-step curriculum plants a regression on the first repository (tests/flows/test_events.py,
tests/e2e/test_automations.py). Trains like tests/echo_trainer.py: no torch."""

from __future__ import annotations

import dataclasses

from tasks.trainers.base import Metric
from tests.echo_trainer import ECHO


def forgetful_evaluate(settings, checkpoint_dir, snapshot, split_kind, splits, repo_ids, *, model_cache_dir):
    value, low, high = (0.9, 0.83, 0.95) if len(repo_ids) == 1 else (0.2, 0.13, 0.29)
    return [Metric(r, s, "top1_accuracy", value, 100, low, high, "wilson") for r in repo_ids for s in splits]


FORGETFUL = dataclasses.replace(
    ECHO, name="forgetful", evaluate="tests.forgetful_trainer:forgetful_evaluate", starts_from=None
)
