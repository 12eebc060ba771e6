"""The containment guard and the axiom guard: pure functions of text, no Lean.

PYTHONPATH=$PWD .venv/bin/python -m pytest tests/tasks/test_lean_guard.py -q
"""

from __future__ import annotations

import pytest

from tasks.lean.backend import ProofCheck
from tasks.lean.guard import DEFAULT_ALLOWED_AXIOMS, forbidden_construct, judge, parse_print_axioms

ACCEPTED = ProofCheck(True, "repl", (), ("propext",))


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


def test_judge_proves_an_accepted_clean_proof():
    verdict = judge(ProofCheck(True, "repl", (), ("propext", "Quot.sound")), "simp")
    assert verdict.proved and "propext" in verdict.reason


@pytest.mark.parametrize(
    "check,proof,why",
    [
        (ProofCheck(True, "repl", ("declaration uses `sorry`",), ("sorryAx",)), "simp", "sorry"),  # REPL's quotes
        (ProofCheck(True, "leandojo", ("declaration uses 'sorry'",)), "simp", "sorry"),  # LeanDojo's quotes
        (ACCEPTED, "sorry", "sorry"),
        (ACCEPTED, "admit", "admit"),
        (ProofCheck(True, "repl", (), ("propext", "sorryAx")), "exact h", "sorryAx"),
        (ProofCheck(True, "repl", (), ("NatBasics.cheat",)), "exact cheat", "NatBasics.cheat"),
        (ProofCheck(True, "repl", (), ("propext", "Lean.ofReduceBool")), "decide", "Lean.ofReduceBool"),
        (ProofCheck(True, "replay"), "native_decide", "native_decide"),
        (ACCEPTED, "simp\n#eval 1", "forbidden"),
        (ProofCheck(False, "repl", ("unsolved goals",)), "simp", "unsolved goals"),
        (ProofCheck(False, "repl", (), (), error="Lean process crashed"), "simp", "crashed"),
    ],
)
def test_judge_rejects_sorry_new_axioms_native_decide_and_failures(check, proof, why):
    verdict = judge(check, proof)
    assert not verdict.proved and why in verdict.reason


def test_allow_list_is_configurable():
    check = ProofCheck(True, "repl", (), ("Classical.choice",))
    assert judge(check, "simp").proved
    assert not judge(check, "simp", allowed_axioms=("propext",)).proved
    assert set(DEFAULT_ALLOWED_AXIOMS) == {"propext", "Classical.choice", "Quot.sound"}


def test_print_axioms_messages_parse_in_both_forms():
    assert parse_print_axioms("'NatBasics.add_zero'' does not depend on any axioms") == ("NatBasics.add_zero'", ())
    assert parse_print_axioms("'foo' does not depend on any axioms") == ("foo", ())
    assert parse_print_axioms("'foo' depends on axioms: [propext, Classical.choice, Quot.sound]") == (
        "foo",
        ("propext", "Classical.choice", "Quot.sound"),
    )
    assert parse_print_axioms("unsolved goals") is None
