"""Intervals for aggregates over theorems: a seeded bootstrap of the mean, and Wilson's
score interval for a proportion (pass@1 with one attempt per theorem).

A pass rate over a few hundred theorems moves by several points between two samples of
them; an aggregate without its interval and its number of theorems cannot be compared
with another (docs/evaluation.md). Both functions are pure and deterministic.

>>> wilson_interval(12, 477)
(0.01445, 0.04345)
>>> bootstrap_interval([0.0, 1.0] * 50, seed=0)
(0.4, 0.6)
"""

from __future__ import annotations

import math
from collections.abc import Sequence

CONFIDENCE = 0.95
Z95 = 1.959963984540054  # the standard normal quantile of 0.975
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 0


def wilson_interval(successes: float, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson's 95% score interval of a proportion successes / n, rounded to 5 digits.
    Unlike the normal approximation it stays inside [0, 1] and is honest at 0 and n."""
    if n <= 0:
        return (math.nan, math.nan)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (round(max(0.0, centre - half), 5), round(min(1.0, centre + half), 5))


def bootstrap_interval(
    values: Sequence[float], seed: int = BOOTSTRAP_SEED, resamples: int = BOOTSTRAP_RESAMPLES
) -> tuple[float, float]:
    """The percentile bootstrap 95% interval of the mean of `values` (theorems resampled
    with replacement, `resamples` times, from `seed`), rounded to 5 digits."""
    if not values:
        return (math.nan, math.nan)
    import numpy as np

    data = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    means = data[rng.integers(0, len(data), size=(resamples, len(data)))].mean(axis=1)
    low, high = np.quantile(means, [(1 - CONFIDENCE) / 2, (1 + CONFIDENCE) / 2])
    return (round(float(low), 5), round(float(high), 5))


def interval(scores: Sequence[float], seed: int = BOOTSTRAP_SEED) -> tuple[float, float, str]:
    """(low, high, method) for the mean of per-theorem scores: Wilson when every score is
    0 or 1 (pass@1 with one attempt), else the seeded bootstrap."""
    if scores and all(s in (0.0, 1.0) for s in scores):
        return (*wilson_interval(sum(scores), len(scores)), "wilson")
    return (*bootstrap_interval(scores, seed), f"bootstrap({BOOTSTRAP_RESAMPLES}, seed {seed})")


def interval_fields(scores: Sequence[float], seed: int = BOOTSTRAP_SEED, scale: float = 1.0) -> dict:
    """{ci_low, ci_high, interval} of the mean of per-item scores (empty: none); `scale` for a
    figure reported as a multiple of the mean (R@k and MRR are ×100 of per-query fractions)."""
    if not scores:
        return {}
    low, high, method = interval(scores, seed)
    return {"ci_low": round(low * scale, 5), "ci_high": round(high * scale, 5), "interval": method}


def bootstrap_statistic_fields(
    n: int, statistic, seed: int = BOOTSTRAP_SEED, resamples: int = BOOTSTRAP_RESAMPLES
) -> dict:
    """{ci_low, ci_high, interval}: the percentile bootstrap 95% interval of `statistic(indices)`
    over `n` items resampled with replacement (e.g. a rank correlation of resampled pairs).
    Resamples where the statistic is undefined (None) are left out; none defined: no interval.

    >>> bootstrap_statistic_fields(4, lambda idx: sum(idx) / len(idx))["interval"]
    'bootstrap(2000, seed 0)'
    """
    if n <= 1:
        return {}
    import numpy as np

    rng = np.random.default_rng(seed)
    values = [v for v in (statistic(list(row)) for row in rng.integers(0, n, size=(resamples, n))) if v is not None]
    if not values:
        return {}
    low, high = np.quantile(values, [(1 - CONFIDENCE) / 2, (1 + CONFIDENCE) / 2])
    method = f"bootstrap({resamples}, seed {seed})"
    return {"ci_low": round(float(low), 5), "ci_high": round(float(high), 5), "interval": method}


def proportion_fields(successes: float, n: int) -> dict:
    """{ci_low, ci_high, interval}: Wilson's interval of successes / n (n = 0: none)."""
    if n <= 0:
        return {}
    low, high = wilson_interval(successes, n)
    return {"ci_low": low, "ci_high": high, "interval": "wilson"}
