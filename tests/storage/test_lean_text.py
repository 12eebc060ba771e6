"""What a theorem's name and statement may be (storage/lean_text.py), one case per line."""

import pytest

from storage.lean_text import lean_name_problem, statement_problem

NAMES = [
    ("Nat.add_comm", None),
    ("_private.Mathlib.Foo.0.bar", None),  # private names hold a number
    ("«term_∣_».x'", None),  # escaped parts, as Name.toString writes them
    ("α.β₁!?", None),  # Greek letters, subscripts, ! and ?
    ("ℕ.𝔸", None),  # letter-like symbols
    ("", "is empty"),
    ("a..b", "is not a Lean name"),
    ("a b", "is not a Lean name"),
    ("λx", "is not a Lean name"),  # λ is not a letter in Lean
    ("1abc", "is not a Lean name"),
    ("x\n#eval 1", "control character (U+000A)"),
    ("x\x00", "control character (U+0000)"),
]


@pytest.mark.parametrize("name, problem", NAMES)
def test_lean_names(name, problem):
    got = lean_name_problem(name)
    assert (got is None) if problem is None else (problem in got), got


STATEMENTS = [
    ("theorem t (n : Nat) : n = n", None),
    ("theorem t (n : Nat) : n = n :=", None),  # LeanDojo's statement runs to the proof
    ('@[simp, to_additive "[x]"]\nprotected theorem T.t : True :=', None),
    ("private lemma t : True", None),
    ("theorem t (s : Finset α) : #s ≤ #s", None),  # Mathlib's cardinality, not a command
    ("theorem t (h : x = y := by simp) : True", None),  # an auto-param's tactic
    ('#eval IO.Process.run {cmd := "id"}', "does not start with a declaration"),
    ("set_option debug.skipKernelTC true in\ntheorem t : False", "does not start with a declaration"),
    ("theorem t : True := trivial\n#eval 1", "second command (`#eval`)"),
    ("theorem t : True := trivial #exit", "second command (`#exit`)"),
    ("theorem t : True\naxiom cheat : False", "second command (`axiom`)"),
    ("theorem t : True := by run_tac pure ()", "second command (`run_tac`)"),
    ("theorem t : True\x00", "control character (U+0000)"),
    ("theorem t : True\x1b[2J", "control character (U+001B)"),
]


@pytest.mark.parametrize("statement, problem", STATEMENTS)
def test_statements(statement, problem):
    got = statement_problem(statement)
    assert (got is None) if problem is None else (problem in got), got
