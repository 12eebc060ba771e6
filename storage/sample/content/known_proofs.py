"""Proofs of some of the sample's `sorry` theorems, kept OUT of the traced data.

The sample's exports trace these theorems as `sorry` (so `dojoflow prove` has them to
prove); these proofs are known only to the Lean test doubles (tests/doubles/), which
accept them as a Lean that has checked them would. Each proof is a list of steps from
the theorem's initial state: (tactic, pretty-printed state after it), the last one
`no goals`. The states are written by hand in Lean 4's format, like the rest of the
sample; no Lean checked these proofs (docs/lean-backends.md, "Known proofs").
"""

from __future__ import annotations

from dataclasses import dataclass

from storage.tactic_text import NO_GOALS

CLASSICAL = ("propext", "Classical.choice", "Quot.sound")


@dataclass(frozen=True)
class KnownProof:
    repo: str  # the sample repository's name, e.g. "NatBasics"
    full_name: str
    steps: tuple[tuple[str, str], ...]  # (tactic, state after), from the initial state
    axioms: tuple[str, ...]  # what `#print axioms` lists for the proved theorem

    @property
    def tactics(self) -> list[str]:
        return [t for t, _ in self.steps]

    @property
    def proof(self) -> str:
        """The tactic block after `:= by`, one step per line."""
        return "\n".join(self.tactics)


_DM = "p q : Prop\nh : ¬(p ∧ q)"
_SQ = "a b : Nat"

KNOWN_PROOFS: tuple[KnownProof, ...] = (
    KnownProof(
        "NatBasics",
        "NatBasics.sumTo_formula",
        (
            (
                "induction n with\n  | zero => rfl\n  | succ n ih =>\n    rw [sumTo_succ, Nat.mul_add, ih]\n"
                "    simp only [Nat.add_mul, Nat.mul_add, Nat.mul_one, Nat.one_mul]\n    omega",
                NO_GOALS,
            ),
        ),
        ("propext",),
    ),
    KnownProof(
        "NatBasics",
        "NatBasics.square_add",
        (
            ("unfold square", f"{_SQ}\n⊢ (a + b) * (a + b) = a * a + 2 * a * b + b * b"),
            (
                "simp only [Nat.add_mul, Nat.mul_add, Nat.two_mul, Nat.mul_comm b a]",
                f"{_SQ}\n⊢ a * a + a * b + (a * b + b * b) = a * a + (a * b + a * b) + b * b",
            ),
            ("omega", NO_GOALS),
        ),
        ("propext",),
    ),
    KnownProof(
        "LogicPuzzles",
        "LogicPuzzles.de_morgan_classical",
        (
            ("intro h", f"{_DM}\n⊢ ¬p ∨ ¬q"),
            ("by_cases hp : p", f"case pos\n{_DM}\nhp : p\n⊢ ¬p ∨ ¬q\n\ncase neg\n{_DM}\nhp : ¬p\n⊢ ¬p ∨ ¬q"),
            ("exact Or.inr (fun hq => h ⟨hp, hq⟩)", f"case neg\n{_DM}\nhp : ¬p\n⊢ ¬p ∨ ¬q"),
            ("exact Or.inl hp", NO_GOALS),
        ),
        CLASSICAL,
    ),
    KnownProof(
        "LogicPuzzles",
        "LogicPuzzles.not_forall_classical",
        (
            ("intro h", "α : Type\nP : α → Prop\nh : ¬∀ (x : α), P x\n⊢ ∃ x, ¬P x"),
            (
                "exact Classical.byContradiction fun hne => h fun x => Classical.byContradiction fun hpx => hne ⟨x, hpx⟩",
                NO_GOALS,
            ),
        ),
        CLASSICAL,
    ),
)


# Proofs of some of the sample's TRAIN theorems that differ from their traced proofs, also kept out
# of the traced data: `omega` decides linear arithmetic over Nat with hypotheses (Lean's
# `omega` docs: "The omega algorithm ... for linear arithmetic over Int and Nat"), so Lean accepts
# it on each of these goals, where the sample traced a rewrite or an `exact`. Expert iteration's
# tests (tests/flows/test_expert_iteration.py) need a proof a model can find that the traced data
# does not contain; only the doubles know these, as they know KNOWN_PROOFS. The axioms are what
# the doubles report for them (`omega`'s proofs use `propext`); no Lean checked them here.
ALTERNATIVE_PROOFS: tuple[KnownProof, ...] = tuple(
    KnownProof("NatBasics", name, (("omega", NO_GOALS),), ("propext",))
    for name in (
        "NatBasics.le_trans'",  # traced: exact Nat.le_trans h₁ h₂
        "NatBasics.le_antisymm'",  # traced: exact Nat.le_antisymm h₁ h₂
        "NatBasics.le_add_right'",  # traced: exact Nat.le_add_right n m
        "NatBasics.add_comm'",  # traced: rw [Nat.add_comm]
        "NatBasics.succ_le_of_lt'",  # traced: exact h
    )
)
