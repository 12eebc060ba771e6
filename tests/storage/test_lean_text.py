"""Lean text as Lean lexes it (storage/lean_text.py): the one `sorry`, names, statements.

PYTHONPATH=$PWD python -m pytest tests/storage/test_lean_text.py -q
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from storage.lean_text import LeanTextError, check_file_path, check_name, is_sorry, lex, parse_statement, quote_name
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
        ('exact s!"{IO.getEnv "HOME"}"', ["exact", "s!", "IO.getEnv"]),  # an interpolation hole is code
    ],
)
def test_lexer_reads_identifiers_as_lean_does(text, names):
    assert [t.name for t in lex(text).tokens if t.kind == "ident"] == names


@pytest.mark.parametrize("text", ["simp /- a /- b -/", 'exact "abc', "exact «abc", 's!"{x"'])
def test_unterminated_comments_strings_and_guillemets_are_errors(text):
    assert lex(text).error is not None


def test_statements_split_into_validated_parts():
    s = parse_statement("/-- doc -/ @[simp] protected theorem Foo.bar {α : Type} (x : α) (h : x = x := rfl) : id x = x")
    assert (s.name, s.binders, s.type) == ("Foo.bar", "{α : Type} (x : α) (h : x = x := rfl)", "id x = x")
    assert s.declaration() == "theorem Foo.bar {α : Type} (x : α) (h : x = x := rfl) : id x = x"
    assert s.proposition() == "∀ {α : Type} (x : α) (h : x = x := rfl), id x = x"
    assert parse_statement("theorem t : a.1 = b").proposition() == "a.1 = b"


@pytest.mark.parametrize(
    "statement,why",
    [
        ('theorem t : True\n#eval IO.Process.run {cmd := "id"}', "#eval"),
        ("theorem t : True\ntheorem u : False", "theorem"),
        ("theorem t : True := trivial", "body"),
        ("theorem t (x : Nat : True", "brackets"),
        ("def t : Nat", "theorem NAME"),
        ("theorem t", "theorem NAME"),
        ("theorem t (x : Nat)", "no type"),
        ("theorem t : True /- open", "does not parse"),
        ("theorem t : True\x00", "NUL"),
    ],
)
def test_statements_that_are_not_one_signature_are_refused(statement, why):
    with pytest.raises(LeanTextError, match=why):
        parse_statement(statement)


@pytest.mark.parametrize("name", ["Foo\n#eval 1", "Foo bar", "a.«b", "", " a", "x -- y", "a\x07"])
def test_names_that_are_not_one_lean_name_are_refused(name):
    with pytest.raises(LeanTextError):
        check_name(name)


def test_names_are_quoted_as_lean_quotes_them():
    assert quote_name("NatBasics.add_zero'") == "NatBasics.add_zero'"
    assert quote_name("Foo.«x y».end") == "Foo.«x y».«end»"
    assert quote_name("α.β₁") == "α.β₁"


@pytest.mark.parametrize("path", ["/etc/passwd", "../x.lean", "A/../../x.lean", "A//B.lean", "A\x00.lean", "C:x", ""])
def test_file_paths_that_leave_the_repository_are_refused(path):
    with pytest.raises(LeanTextError):
        check_file_path(path)
    check_file_path("NatBasics/Add.lean")
