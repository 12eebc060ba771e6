"""The text pre-filter and the reading of `#print axioms`: pure functions of text, no Lean.
(The verdict rule: tests/tasks/test_lean_verdict.py.)

PYTHONPATH=$PWD .venv/bin/python -m pytest tests/tasks/test_lean_guard.py -q
"""

from __future__ import annotations

import pytest

from tasks.lean.guard import forbidden_construct, parse_print_axioms


@pytest.mark.parametrize(
    "text",
    [
        "simp\n#eval IO.println 1",
        'run_cmd Lean.logInfo "x"',
        "run_tac do pure ()",
        'elab "foo" : tactic => pure ()',
        'macro "foo" : tactic => `(tactic| rfl)',
        "initialize counter : IO.Ref Nat ← IO.mkRef 0",
        'exact (unsafeIO (IO.Process.spawn {cmd := "sh"}))',
        "simp\ntheorem evil : False := sorry",
        "simp\naxiom cheat : False",
        "set_option debug.skipKernelTC true in rfl",
        "simp /- unterminated",
        'simp; exact "unterminated',
        "omega\nend NatBasics",
        "@[implemented_by foo] def bar := 1",
        "#print axioms foo",
    ],
)
def test_forbidden_constructs_are_named(text):
    why = forbidden_construct(text)
    assert why is not None and why.strip()


@pytest.mark.parametrize(
    "text",
    [
        "simp",
        "rw [Nat.add_comm]",
        "induction xs with\n  | nil => rfl\n  | cons x xs ih => simp [List.append, ih]",
        "exact ⟨_, rfl⟩",
        "intro h; exact h.1",
        "simp [List.length_append]  -- #eval in a comment is fine",
        "exact inferInstance",
        "open Nat in simp",
        "exact #[1, 2].size_pos",
        "cases h with\n  | inl h => exact Or.inr h",
    ],
)
def test_ordinary_tactics_pass(text):
    assert forbidden_construct(text) is None


def test_print_axioms_messages_parse_in_both_forms():
    assert parse_print_axioms("'NatBasics.add_zero'' does not depend on any axioms") == ("NatBasics.add_zero'", ())
    assert parse_print_axioms("'foo' does not depend on any axioms") == ("foo", ())
    assert parse_print_axioms("'foo' depends on axioms: [propext, Classical.choice, Quot.sound]") == (
        "foo",
        ("propext", "Classical.choice", "Quot.sound"),
    )
    assert parse_print_axioms("unsolved goals") is None
