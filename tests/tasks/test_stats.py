"""Intervals over theorems and examples (tasks/stats.py): Wilson's for proportions, a
seeded bootstrap for means of fractional scores.

    PYTHONPATH=$PWD .venv/bin/python -m pytest tests/tasks/test_stats.py -q
"""

from __future__ import annotations

import doctest

import pytest

from tasks import stats


def test_doctests():
    assert doctest.testmod(stats).failed == 0


@pytest.mark.parametrize(
    "c, n, low, high",
    [
        (0, 10, 0.0, 0.27753),  # honest at 0: the normal approximation would say [0, 0]
        (10, 10, 0.72247, 1.0),
        (12, 477, 0.01445, 0.04345),  # issue 17's `simp` baseline, 12/477
        (6, 456, 0.00604, 0.02841),  # and the tiny model's 6/456: the intervals overlap
    ],
)
def test_wilson_intervals_by_hand(c, n, low, high):
    # checked against the roots of (c/n - p)^2 = z^2 p (1 - p) / n, solved as a quadratic
    assert stats.wilson_interval(c, n) == (low, high)


def test_the_bootstrap_is_seeded_and_covers_the_mean():
    scores = [0.0, 0.25, 0.5, 1.0] * 10
    a = stats.interval_fields(scores)
    assert a == stats.interval_fields(scores) and a["interval"].startswith("bootstrap")
    assert a["ci_low"] < sum(scores) / len(scores) < a["ci_high"]
    assert stats.interval_fields(scores, seed=1) != a  # another seed, another resample
    assert stats.interval_fields([1.0, 0.0, 1.0])["interval"] == "wilson" and stats.interval_fields([]) == {}
    assert stats.proportion_fields(0, 0) == {} and stats.proportion_fields(2, 8)["ci_high"] == 0.59072
