"""The unbiased pass@k estimator of Chen et al. 2021 ("Evaluating Large Language Models
Trained on Code", arXiv 2107.03374, section 2.1).

A problem tried n times with c successes scores 1 - C(n-c, k) / C(n, k), computed as the
numerically stable product 1 - prod_{i=n-c+1..n} (1 - k/i); it is 1 when n - c < k.
pass@k of a set of problems is the mean over problems (docs/proving.md).

>>> pass_at_k(2, 1, 1)
0.5
>>> round(pass_at_k(5, 2, 2), 4)   # 1 - C(3,2)/C(5,2) = 1 - 3/10
0.7
"""

from __future__ import annotations

from collections.abc import Iterable

from storage.errors import InputError
from tasks.metric_registry import register_metric

# The figure this estimator gives, as the proving evaluation and GRPO's evaluation name it
# (`<checker>_pass@<k>`, tasks/proving/evaluate.py pass_metric), and the closing-tactics
# baseline's beside it (tasks/generate/baseline.py): tasks/metric_registry.py.
register_metric(
    "{checker}_pass@{k}", direction="higher", kind="score", unit="share", question="proving",
    baseline="baseline_{checker}_pass@{k}", description="share of theorems proved within k attempts (Chen et al.)",
)  # fmt: skip
register_metric(
    "baseline_{checker}_pass@{k}", direction="higher", kind="baseline", unit="share",
    description="pass@k of the closing-tactics baseline, same search, backend and budgets",
)  # fmt: skip


def pass_at_k(n: int, c: int, k: int) -> float:
    """Probability that at least one of k attempts drawn from the n made (c correct) succeeds."""
    if k < 1:
        raise InputError("k", f"is {k}", "pass@k needs k >= 1")
    if n < k:
        raise InputError(
            "attempts", f"{n} attempts cannot estimate pass@{k}", f"make at least {k} attempts per theorem"
        )
    if not 0 <= c <= n:
        raise InputError(
            "successes", f"{c} is not between 0 and the {n} attempts", "count successes among the attempts"
        )
    if n - c < k:
        return 1.0
    fail = 1.0
    for i in range(n - c + 1, n + 1):
        fail *= 1.0 - k / i
    return 1.0 - fail


def pass_at_k_mean(counts: Iterable[tuple[int, int]], k: int) -> float:
    """Mean pass@k over problems given as (attempts n, successes c); nan when there are none."""
    scores = [pass_at_k(n, c, k) for n, c in counts]
    return sum(scores) / len(scores) if scores else float("nan")
