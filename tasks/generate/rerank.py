"""Re-ranking by the progress model: candidates are tried fewest predicted steps remaining
first (LeanAgent's use of a progress model), keeping the generator's log-probabilities,
which stay the search's node priorities."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .base import Candidates, TacticQuery


@dataclass(frozen=True)
class ProgressReranked:
    inner: Any  # a TacticGenerator
    scorer: Any  # tasks.progress.scorer.ProgressScorer

    @property
    def name(self) -> str:
        return f"progress-reranked({self.inner.name})"

    @classmethod
    def load(cls, inner, progress_checkpoint: str) -> "ProgressReranked":
        from tasks.progress.scorer import ProgressScorer

        return cls(inner=inner, scorer=ProgressScorer.load(progress_checkpoint))

    def generate(self, queries: Sequence[TacticQuery], k: int) -> list[Candidates]:
        out = []
        for q, candidates in zip(queries, self.inner.generate(queries, k)):
            if len(candidates) < 2:
                out.append(candidates)
                continue
            steps = self.scorer.score(q.goals, list(q.prefix), [t for t, _ in candidates])
            order = sorted(range(len(candidates)), key=lambda i: steps[i])  # stable: ties keep the generator's order
            out.append([candidates[i] for i in order])
        return out

    def generate_proofs(self, queries: Sequence[TacticQuery], n: int) -> list[Candidates]:
        return self.inner.generate_proofs(queries, n)

    def reseed(self, seed: int) -> None:
        self.inner.reseed(seed)

    def close(self) -> None:
        self.inner.close()
