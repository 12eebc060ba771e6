"""Splitting a proof into the top-level tactics lean-dojo's Lean4Repl takes one at a time
(tasks/lean/tactic_split.py). One commented case per line; the expected splits are Lean's
layout rule for tactic sequences (`sepByIndent tactic "; "`), written out by hand."""

from __future__ import annotations

import pytest

from tasks.lean.tactic_split import split_tactics


@pytest.mark.parametrize(
    "proof, tactics",
    [
        ("omega", ["omega"]),  # one tactic
        ("unfold square\nomega", ["unfold square", "omega"]),  # one per line
        ("  intro n\n  simp", ["intro n", "simp"]),  # the block's own indentation is not part of a tactic
        ("simp; omega", ["simp", "omega"]),  # `;` separates
        ("constructor <;> simp", ["constructor <;> simp"]),  # `<;>` is one tactic
        ("constructor\n<;> simp", ["constructor\n<;> simp"]),  # ... also across a line break
        ("simp [a; b]", ["simp [a; b]"]),  # `;` inside brackets does not split
        ("simp only [Nat.add_mul,\n  Nat.mul_add]\nomega", ["simp only [Nat.add_mul,\n  Nat.mul_add]", "omega"]),
        ("constructor\n· simp\n  omega\n· rfl", ["constructor", "· simp\n  omega", "· rfl"]),  # focusing dots
        (
            "induction n with\n| zero => rfl\n| succ k ih =>\n  simp [ih]",  # alternatives continue `induction`
            ["induction n with\n| zero => rfl\n| succ k ih =>\n  simp [ih]"],
        ),
        ("intro h\n-- a comment\nexact h", ["intro h", "exact h"]),  # comment lines dropped
        ("exact h -- why; not a split", ["exact h -- why; not a split"]),  # `;` in a comment
        ("", []),  # nothing
    ],
)
def test_split_tactics(proof, tactics):
    assert split_tactics(proof) == tactics
