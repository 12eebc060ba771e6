"""One text (issue 27 §1): the guard judges exactly the bytes Lean receives.

A property test (hypothesis) generates proofs from every Unicode line-break and space class
(CR, VT, FF, the file/group/record separators, NEL, U+2028/U+2029, no-break and other spaces,
zero-width and bidi format controls, the BOM, NUL) mixed with the pieces of Lean text that a
different line structure would turn into code (`--`, `/-`, strings, `#exit`, `set_option`).
For every text either the one canonicalisation (`storage.lean_text.canonical_proof`) refuses
it, as a rejection with its reason on every path (never an exception), or: the command sent
to Lean is built from that very text, split at LF only (Lean's only line break,
src/Lean/Parser/Basic.lean `whitespace`), line for line the lines the guard read, and the
guard's tokens are the tokens of what Lean is sent.

    PYTHONPATH=$PWD .venv/bin/python -m pytest tests/lean/test_canonical_text.py -q
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from storage.lean_lexer import lex
from storage.lean_text import LeanTextError, canonical_proof
from tasks.lean.backend import ProofCheck, TheoremSpec
from tasks.lean.guard import forbidden_construct
from tasks.lean.source import proof_command
from tasks.lean.verdict import bad_input, judge

THEOREM = TheoremSpec("t", "", "", "", "T", "theorem T (n : Nat) : n + 0 = n", None)

# Every character Python, an editor or a terminal may read as a line break or a space.
LINE_BREAKS = ["\n", "\r", "\r\n", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]
SPACES = [" ", "\t", "\xa0", "\u1680", *map(chr, range(0x2000, 0x200B)), "\u202f", "\u205f", "\u3000"]
FORMAT = ["\u200b", "\u200c", "\u200d", "\u200e", "\u200f", "\u202a", "\u202e", "\u2066", "\u2069", "\ufeff", "\x00"]
PIECES = ["--", "/-", "-/", '"', "'", "{", "}", "\\", "#exit", "set_option", "native_decide", "simp", "rfl", "x"]
REFUSED = set(LINE_BREAKS + SPACES + FORMAT) - {"\n", " ", "\t", "\r\n"}

texts = st.lists(st.sampled_from(LINE_BREAKS + SPACES + FORMAT + PIECES), max_size=30).map("".join)


def sent_body(text: str) -> str:
    """The proof part of the command Lean is sent."""
    command = proof_command(THEOREM, text)
    return command.split(":= by\n", 1)[1]


@settings(max_examples=400, deadline=None)
@given(texts)
def test_the_guard_reads_every_byte_lean_is_sent_in_the_same_lines(text):
    try:
        canonical = canonical_proof(text)
    except LeanTextError:
        # Refused: a rejection with its reason wherever the proof goes, never sent.
        assert any(c in REFUSED for c in text.replace("\r\n", "\r"))
        why = forbidden_construct(text)
        assert why is not None and judge(ProofCheck(True, "repl"), text).status == "rejected"
        # a control character (NUL, VT, FF, NEL) is also bad input: an error verdict naming it
        assert bad_input(THEOREM, text) is None or "control character" in bad_input(THEOREM, text)
        with pytest.raises(LeanTextError):
            proof_command(THEOREM, text)
        return
    assert canonical == text and not any(c in REFUSED for c in text)
    body = sent_body(text)
    # Lean's lines are the reader's lines: no byte but LF breaks one (str.splitlines breaks at all of them).
    assert body.splitlines() == body.rstrip("\n").split("\n") or body.strip() == ""
    # line for line, the proof's own lines, two spaces further in (a line of spaces is sent empty)
    expected = [line if line.strip(" \t") else "" for line in text.strip("\n").split("\n")]
    assert [line[2:] for line in body.rstrip("\n").split("\n")] == expected
    # and the guard's tokens are the tokens of what Lean gets
    guard, lean = lex(text), lex(body)
    assert (guard.error is None) == (lean.error is None)
    if guard.error is None:
        assert [t.text for t in guard.tokens] == [t.text for t in lean.tokens]


@pytest.mark.parametrize("char", sorted(REFUSED))
def test_each_line_break_space_and_format_control_is_refused_with_its_reason(char):
    text = f"simp -- note{char}exact native_proof"
    why = forbidden_construct(text)
    assert why is not None and f"U+{ord(char):04X}" in why
    with pytest.raises(LeanTextError):
        proof_command(THEOREM, text)
