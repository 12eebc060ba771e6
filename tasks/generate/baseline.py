"""The closing-tactics baseline: a "model" that answers every proof state with the same
fixed list of common closing tactics (`simp`, `rfl`, `decide`, `omega`, ...).

Every pass@k table carries this baseline, measured by the same search, backend, budgets
and theorems as the model (tasks/proving/evaluate.py), because a trained model that
scores below "always answer `simp`" has learned nothing a reader should cite (issue 17:
on held-out data a tiny model scored replay pass@4 6/456 where `simp` alone scored 12/477).

    from tasks.generate.baseline import ClosingTacticsGenerator
    ClosingTacticsGenerator().generate([TacticQuery("⊢ 1 + 1 = 2")], 4)
"""

from __future__ import annotations

from collections.abc import Sequence

from .base import Candidates, TacticQuery

# The fixed list, in the order tried. Each is a tactic that closes goals on its own in
# Lean 4 core or Mathlib; where a repository lacks Mathlib, Lean rejects the Mathlib ones
# (`norm_num`, `linarith`, `ring`, `aesop`), which costs the baseline nothing but time.
CLOSING_TACTICS = (
    "simp",
    "rfl",
    "decide",
    "omega",
    "trivial",
    "simp_all",
    "assumption",
    "norm_num",
    "linarith",
    "ring",
    "aesop",
    "contradiction",
)
BASELINE_NAME = "baseline:closing-tactics"


class ClosingTacticsGenerator:
    """A TacticGenerator that always proposes CLOSING_TACTICS, ignoring the state.

    `generate` returns the first `k` of them (the model is held to the same `num_tactics`),
    with log-probabilities that keep the list's order; `generate_proofs` samples each as a
    one-tactic proof, cycling through the list to give `n` of them."""

    name = BASELINE_NAME

    def __init__(self, tactics: Sequence[str] = CLOSING_TACTICS):
        self.tactics = tuple(tactics)

    def _ranked(self, count: int) -> Candidates:
        return [(self.tactics[i % len(self.tactics)], -0.01 * i) for i in range(count)]

    def generate(self, queries: Sequence[TacticQuery], k: int) -> list[Candidates]:
        return [self._ranked(min(k, len(self.tactics))) for _ in queries]

    def generate_proofs(self, queries: Sequence[TacticQuery], n: int) -> list[Candidates]:
        return [self._ranked(n) for _ in queries]

    def reseed(self, seed: int) -> None:
        """Deterministic: every attempt asks the same list."""

    def close(self) -> None:
        """Holds nothing."""
