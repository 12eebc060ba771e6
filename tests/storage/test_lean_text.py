"""Lean text as Lean lexes it (storage/lean_text.py): the one `sorry`, names, statements.

PYTHONPATH=$PWD python -m pytest tests/storage/test_lean_text.py -q
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from storage.lean_text import (
    LeanTextError,
    check_file_path,
    check_name,
    is_sorry,
    lean_name_problem,
    lex,
    parse_statement,
    quote_name,
    statement_problem,
)
from storage.tactic_text import is_sorry as storage_is_sorry
from storage.tactic_text import sorry_mask
from tasks.sft.data import is_sorry as sft_is_sorry


@pytest.mark.parametrize(
    "tactic,expected",
    [
        ("sorry", True),
        ("admit", True),
        ("exact sorry", True),
        ("refine ⟨sorry, h⟩", True),  # storage said False, tasks/sft/data said True: one answer now
        ("exact (sorry)", True),
        ("exact _root_.sorryAx _ false", True),
        ("exact «sorryAx» _ false", True),
        ("simp\nsorry", True),
        ("decreasing_by sorry", True),
        ("simp -- sorry", False),  # a comment: Lean does not read it
        ("simp /- sorry /- nested -/ -/", False),
        ('trace "sorry"', False),  # a string
        ("exact sorry_lemma", False),  # another identifier
        ("exact Foo.sorry", False),
        ("exact h.sorry'", False),
        ("ѕorry", False),  # Cyrillic s: not the identifier sorry
        ("simp /- unterminated sorry", True),  # nothing after an unterminated comment is trusted
        ("rfl", False),
    ],
)
def test_one_definition_of_sorry(tactic, expected):
    assert is_sorry(tactic) is expected
    assert storage_is_sorry(tactic) is expected and sft_is_sorry(tactic) is expected


def test_sorry_mask_agrees_with_is_sorry():
    tactics = ["simp", "refine ⟨sorry, h⟩", "simp -- sorry", "exact «sorryAx» _ x", "admit"]
    assert (
        sorry_mask(pa.array(tactics)).to_pylist()
        == [is_sorry(t) for t in tactics]
        == [
            False,
            True,
            False,
            True,
            True,
        ]
    )


@pytest.mark.parametrize(
    "text,names",
    [
        ('have _h := (\'"\', "--"); run_tac x', ["have", "_h", "run_tac", "x"]),  # '"' is a char literal
        ("have «h--» := 0; native_decide", ["have", "h--", "native_decide"]),
        ("exact _root_.Lean.ofReduceBool", ["exact", "Lean.ofReduceBool"]),
        ('trace "a\\"b -- c"\nsimp', ["trace", "simp"]),  # an escaped quote does not end the string
        ('trace r#"x " -- y"#\nsimp', ["trace", "simp"]),  # a raw string
        ("/- a /- b -/ c -/ simp", ["simp"]),  # nested comments
        ('exact s!"{IO.getEnv x}"', ["exact", "s!", "IO.getEnv", "x"]),  # an interpolation hole is code
        ('exact s! "{IO.getEnv x}"', ["exact", "s!", "IO.getEnv", "x"]),  # with a space too (no `noWs`)
        ('exact id "{IO.getEnv x}"', ["exact", "id", "IO.getEnv", "x"]),  # any `{` in a string: read as code
        ("exact (h : f ⁻¹' s ⊆ t)", ["exact", "h", "f", "s", "t"]),  # Mathlib's preimage, where both readings agree
        ("simp [f ⁻¹' (s ∩ t)]", ["simp", "f", "s", "t"]),
    ],
)
def test_lexer_reads_identifiers_as_lean_does(text, names):
    assert [t.name for t in lex(text).tokens if t.kind == "ident"] == names


@pytest.mark.parametrize(
    "text",
    [
        "simp /- a /- b -/",
        'exact "abc',
        "exact «abc",
        's!"{x"',
        's!"{IO.getEnv "HOME"}"',  # plain and interpolated readings end at different quotes
        "exact 'x-- y",  # a broken char literal: Lean resumes reading after `'x-`
        "exact f ⁻¹' -- #exit",  # without Mathlib's tokens `⁻¹'` is `⁻¹` and a broken char literal
        "exact f ⁻¹' s'-- #exit",
        "exact 1e-- y",  # a number missing its exponent: Lean resumes after `1e-`
        "exact 0x-- y",
        'exact "\\q"',  # an invalid escape
        'exact "a\\\n\n#exit"',  # a string gap with a second newline
    ],
)
def test_unterminated_comments_strings_and_guillemets_are_errors(text):
    assert lex(text).error is not None


def test_statements_split_into_validated_parts():
    s = parse_statement("/-- doc -/ @[simp] protected theorem Foo.bar {α : Type} (x : α) (h : x = x := rfl) : id x = x")
    assert (s.name, s.binders, s.type) == ("Foo.bar", "{α : Type} (x : α) (h : x = x := rfl)", "id x = x")
    assert s.declaration() == "theorem Foo.bar {α : Type} (x : α) (h : x = x := rfl) : id x = x"
    assert s.proposition() == "∀ {α : Type} (x : α) (h : x = x := rfl), id x = x"
    assert parse_statement("theorem t : a.1 = b").proposition() == "a.1 = b"


# wt-store's cases for the importer's reasons (storage/leandojo), one per line.
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
    ("a.«b", "is not a Lean name"),
    ("x -- y", "is not a Lean name"),
    ("x\n#eval 1", "control character (U+000A)"),
    ("x\x00", "control character (U+0000)"),
]


@pytest.mark.parametrize("name, problem", NAMES)
def test_lean_names(name, problem):
    got = lean_name_problem(name)
    assert (got is None) if problem is None else (problem in got), got
    if problem is not None:
        with pytest.raises(LeanTextError):
            check_name(name)


STATEMENTS = [
    ("theorem t (n : Nat) : n = n", None),
    ("theorem t (n : Nat) : n = n :=", None),  # LeanDojo's statement runs to the proof
    ('@[simp, to_additive "[x]"]\nprotected theorem T.t : True :=', None),
    ("@[foo [bar]] theorem t : True", None),  # brackets nested in an attribute
    ("private lemma t : True", None),
    ("theorem t (s : Finset α) : #s ≤ #s", None),  # Mathlib's cardinality, not a command
    ("theorem t (h : x = y := by simp) : True", None),  # an auto-param's tactic
    ('theorem t : "--" = "--"', None),  # `--` in a string is no comment
    ('theorem t : "#eval" = "open"', None),  # command words in strings: cleared by the lexer
    ('#eval IO.Process.run {cmd := "id"}', "does not start with a declaration"),
    ("set_option debug.skipKernelTC true in\ntheorem t : False", "does not start with a declaration"),
    ("theorem t : True := trivial\n#eval 1", "second command (`#eval`)"),
    ("theorem t : True := trivial #exit", "second command (`#exit`)"),
    ("theorem t : True\naxiom cheat : False", "second command (`axiom`)"),
    ("theorem t : True := by run_tac pure ()", "second command (`run_tac`)"),
    ("theorem t : True\ntheorem u : False", "second command (`theorem`)"),
    ("theorem t : True\x00", "control character (U+0000)"),
    ("theorem t : True\x1b[2J", "control character (U+001B)"),
]


@pytest.mark.parametrize("statement, problem", STATEMENTS)
def test_statements(statement, problem):
    got = statement_problem(statement)
    assert (got is None) if problem is None else (problem in got), got


@pytest.mark.parametrize(
    "statement,why",
    [
        ("theorem t : True := trivial", "body"),  # acceptable data, but no signature to build commands from
        ("theorem t (x : Nat : True", "brackets"),
        ("theorem (x : Nat) : True", "not followed by a name"),
        ("theorem t", "no type"),
        ("theorem t (x : Nat)", "no type"),
        ("theorem t : True /- open", "does not parse"),  # the importer's textual pass lets this by
    ],
)
def test_statements_that_give_no_signature_are_refused_for_commands(statement, why):
    with pytest.raises(LeanTextError, match=why):
        parse_statement(statement)


def test_names_are_quoted_as_lean_quotes_them():
    assert quote_name("NatBasics.add_zero'") == "NatBasics.add_zero'"
    assert quote_name("Foo.«x y».end") == "Foo.«x y».«end»"
    assert quote_name("α.β₁") == "α.β₁"
    assert quote_name("_private.M.0.x") == "_private.M.0.x"


@pytest.mark.parametrize("path", ["/etc/passwd", "../x.lean", "A/../../x.lean", "A//B.lean", "A\x00.lean", "C:x", ""])
def test_file_paths_that_leave_the_repository_are_refused(path):
    with pytest.raises(LeanTextError):
        check_file_path(path)
    check_file_path("NatBasics/Add.lean")
