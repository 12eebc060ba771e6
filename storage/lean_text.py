"""What a theorem's name, statement and file path may hold (issue 16 §5).

Theorem data comes from exports and traces that anyone can write, and parts of it reach
Lean inside commands (`#print axioms NAME`, a statement followed by a proof). So on
import a name must be one Lean name, a statement one declaration's signature, and
neither may hold NUL or other control characters (docs/leandojo-export.md, "What a
record may hold"). The rules refuse rather than repair: a refused record names itself.

Each `*_problem` function returns None for acceptable text, else a short reason.

>>> lean_name_problem("Nat.add_comm") is None
True
>>> lean_name_problem("«term_∣_».x'") is None
True
>>> lean_name_problem("foo\\n#eval 1")
'holds a control character (U+000A)'
>>> statement_problem("theorem t (n : Nat) : n = n :=") is None
True
>>> statement_problem("theorem t : True := trivial\\n#eval IO.Process.run {cmd := \\"id\\"}")
'holds a second command (`#eval`)'
"""

from __future__ import annotations

import re

# C0 controls but tab, line feed and carriage return (a statement spans lines), DEL, C1.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_CONTROL_IN_NAME = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def control_problem(text: str, lines: bool = False) -> str | None:
    """A reason when `text` holds a control character (`lines`: newlines and tabs allowed)."""
    m = (_CONTROL if lines else _CONTROL_IN_NAME).search(text)
    return f"holds a control character (U+{ord(m.group()):04X})" if m else None


# Lean 4's identifier characters: Lean.isLetterLike, isSubScriptAlnum, isIdFirst and
# isIdRest (lean4 src/Init/Meta/Defs.lean; `Char.isAlpha` is ASCII there).
_LETTER_LIKE = (
    "\u03b1-\u03ba\u03bc-\u03c9"  # lower Greek but λ
    "\u0391-\u039f\u03a1\u03a2\u03a4-\u03a9"  # upper Greek but Π and Σ
    "\u03ca-\u03fb\u1f00-\u1ffe\u2100-\u214f\U0001d49c-\U0001d59f"
    "\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u00ff\u0100-\u017f"  # Latin-1 but × ÷, Latin Extended-A
)
_SUBSCRIPT = "\u2080-\u2089\u2090-\u209c\u1d62-\u1d6a\u2c7c"
_ID_FIRST = f"A-Za-z_{_LETTER_LIKE}"
_ID_REST = f"{_ID_FIRST}0-9'!?{_SUBSCRIPT}"
# A component: an identifier, a number (private names: `_private.M.0.x`), or «escaped»
# text without guillemets or newlines (Lean.Name.toString's escaping).
_COMPONENT = rf"(?:[{_ID_FIRST}][{_ID_REST}]*|[0-9]+|«[^«»\n]+»)"
_LEAN_NAME = re.compile(rf"{_COMPONENT}(?:\.{_COMPONENT})*")


def lean_name_problem(name: str) -> str | None:
    """A reason when `name` is not one Lean name as `Name.toString` writes it."""
    if not name:
        return "is empty"
    problem = control_problem(name)
    if problem:
        return problem
    if len(name) > MAX_NAME_CHARS:
        return f"is {len(name)} characters long (at most {MAX_NAME_CHARS})"
    if not _LEAN_NAME.fullmatch(name):
        return "is not a Lean name (dot-separated identifiers, numbers or «escaped» parts)"
    return None


MAX_NAME_CHARS = 4096
MAX_STATEMENT_CHARS = 1 << 20

# Words that start a command in Lean 4 core and Mathlib. A keyword is never an identifier,
# so one of these standing alone in a signature starts a second command, or wraps the
# declaration in one that changes how Lean checks it (`set_option ... in`).
_COMMAND_WORDS = (
    "theorem lemma def example instance abbrev axiom opaque structure class inductive "
    "coinductive variable universe namespace section end open export import set_option "
    "attribute elab elab_rules macro macro_rules syntax declare_syntax_cat notation infix "
    "infixl infixr prefix postfix initialize builtin_initialize run_cmd run_elab run_meta "
    "run_tac by_elab mutual deriving omit include add_decl_doc register_option"
).split()
# `#eval`, `#print`, `#exit`, ... Mathlib's `#s` / `#α` (cardinality) is `#` then a term: a one-letter word or a Greek letter
# is not read as a command; a longer ASCII word after `#` is (every `#` command is).
_SECOND_COMMAND = re.compile(
    rf"(?<![{_ID_REST}.])(?:{'|'.join(_COMMAND_WORDS)})(?![{_ID_REST}])|(?<![{_ID_REST}])#[A-Za-z_][A-Za-z_0-9]+!?"
)
_DECL_HEAD = re.compile(
    r"\s*(?:@\[(?:[^\[\]]|\[[^\[\]]*\])*\]\s*)*"  # attributes (one level of brackets inside)
    r"(?:(?:private|protected|noncomputable|nonrec|unsafe|partial|scoped|local)\s+)*"
    r"(?:theorem|lemma|example|def|instance|abbrev)\b"
)


def statement_problem(statement: str) -> str | None:
    """A reason when `statement` is not one declaration's signature (LeanDojo's
    `theorem_statement`: the declaration from its modifiers to the proof, comments
    removed, so it may end in `:=`)."""
    problem = control_problem(statement, lines=True)
    if problem:
        return problem
    if len(statement) > MAX_STATEMENT_CHARS:
        return f"is {len(statement)} characters long (at most {MAX_STATEMENT_CHARS})"
    head = _DECL_HEAD.match(statement)
    if head is None:
        return "does not start with a declaration (`theorem`, `lemma`, `def`, ...)"
    second = _second_command(statement, head.end())
    if second:
        return f"holds a second command (`{second.group()}`)"
    return None


# The words as plain text: a search without lookbehinds, twice as fast, rules out most statements.
_ANY_COMMAND_WORD = re.compile("|".join(sorted(_COMMAND_WORDS, key=len, reverse=True)) + "|#")


def _second_command(statement: str, start: int):
    """The first command word after `start`, if any."""
    if not _ANY_COMMAND_WORD.search(statement, start):
        return None
    return _SECOND_COMMAND.search(statement, start)


def is_statement(statement: str | None) -> bool:
    """True when `statement` is acceptable (None is: LeanDojo writes null for some)."""
    return statement is None or statement_problem(statement) is None
