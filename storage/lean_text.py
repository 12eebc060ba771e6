"""What a theorem's name, statement and file path may hold, and the Lean commands built from them.

Theorem data comes from exports and traces that anyone can write, and parts of it reach
Lean inside commands (`#print axioms NAME`, a statement followed by a proof). So a name
must be one Lean name, a statement one declaration's signature, a path stay inside its
repository, and none may hold NUL or other control characters (issue 16 §5). The rules
refuse rather than repair. Statements are read with the lexer (storage/lean_lexer.py), so
a `--` inside a string or a `#s` (Mathlib's cardinality) is read as Lean reads it.

Two styles, one set of rules: the importer (storage/leandojo) asks `*_problem(text)` for a
short reason or None; the Lean backends call `check_*`/`parse_statement`, which raise
`LeanTextError`, and build commands from the parts (`Statement.declaration`, `quote_name`).

>>> lean_name_problem("Nat.add_comm") is None
True
>>> lean_name_problem("foo\\n#eval 1")
'holds a control character (U+000A)'
>>> statement_problem("theorem t (n : Nat) : n = n :=") is None
True
>>> statement_problem('theorem t : True := trivial\\n#eval IO.Process.run {cmd := "id"}')
'holds a second command (`#eval`)'
>>> parse_statement("theorem t (n : Nat) : n + 0 = n :=").proposition()
'∀ (n : Nat), n + 0 = n'
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass

from .lean_lexer import ID_FIRST, ID_REST, SORRY_NAMES, Lexed, Token, is_command, is_sorry, lex

__all__ = [
    "DEFAULT_ALLOWED_AXIOMS",
    "MAX_NAME_CHARS",
    "MAX_PROOF_CHARS",
    "MAX_STATEMENT_CHARS",
    "SORRY_NAMES",
    "LeanTextError",
    "Lexed",
    "Statement",
    "Token",
    "check_file_path",
    "check_name",
    "canonical_proof",
    "check_text",
    "control_problem",
    "declared_name",
    "is_command",
    "is_sorry",
    "is_statement",
    "lean_name_problem",
    "lex",
    "name_mismatch",
    "parse_statement",
    "quote_name",
    "split_name",
    "statement_problem",
    "tactic_problem",
]

DEFAULT_ALLOWED_AXIOMS: tuple[str, ...] = ("propext", "Classical.choice", "Quot.sound")
"""The axioms of Lean's core logic, the verdict rule's default allow-list (a setting:
`allowed_axioms`, tasks/lean/verdict.py); `sorryAx`, `Lean.ofReduceBool` and
`Lean.trustCompiler` are outside."""

MAX_NAME_CHARS = 4096
MAX_STATEMENT_CHARS = 1 << 20
MAX_PROOF_CHARS = 20_000
"""Longest proof text sent to Lean: longer model output is refused, not truncated."""


class LeanTextError(ValueError):
    """Text that must not reach Lean; `reason` says what is wrong, the message also the fix."""

    def __init__(self, reason: str, fix: str = ""):
        self.reason = reason
        super().__init__(f"{reason}; {fix}" if fix else reason)


# C0 controls but tab, line feed and carriage return (a statement spans lines), DEL, C1,
# and lone surrogates (what invalid UTF-8 decodes to with `surrogateescape`).
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")
_CONTROL_IN_NAME = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff]")


def control_problem(text: str, lines: bool = False) -> str | None:
    """A reason when `text` holds a control character (`lines`: newlines and tabs allowed)."""
    m = (_CONTROL if lines else _CONTROL_IN_NAME).search(text)
    return f"holds a control character (U+{ord(m.group()):04X})" if m else None


def check_text(text, what: str, limit: int) -> str:
    """`text` as str, or LeanTextError unless it is UTF-8 text Lean may be given: no NUL or
    other control characters (tab and newline are fine), at most `limit` characters."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as e:
            raise LeanTextError(f"{what} is not valid UTF-8 ({e.reason} at byte {e.start})", "send UTF-8") from None
    if not isinstance(text, str):
        raise LeanTextError(f"{what} is a {type(text).__name__}, not text", "give Lean text")
    if len(text) > limit:
        raise LeanTextError(f"{what} is {len(text)} characters long (at most {limit})", "shorten it")
    problem = control_problem(text, lines=True)
    if problem:
        raise LeanTextError(f"{what} {problem}", "remove it")
    return text


# Characters a proof may not hold, whatever Lean would make of them. Lean ends a line (and a
# `--` comment) at LF only (src/Lean/Parser/Basic.lean `whitespace`: `takeUntilFn (· = '\n')`),
# reads space, tab, CR and LF as whitespace (`Char.isWhitespace`) and refuses an isolated CR;
# Python, editors and readers also break lines at CR, VT, FF, NEL, U+2028 and U+2029
# (`str.splitlines`), and bidi and other format controls (category Cf, the BOM among them)
# change what a reader sees without changing what Lean reads. Any of them would let one reading
# of a proof differ from Lean's, so a proof holding one is refused, never repaired.
_LINE_BREAKS = {
    "\r": "CR",
    "\x0b": "VT",
    "\x0c": "FF",
    "\x85": "NEL",
    "\u2028": "LINE SEPARATOR",
    "\u2029": "PARAGRAPH SEPARATOR",
}


def canonical_proof(text, what: str = "the proof", limit: int = MAX_PROOF_CHARS) -> str:
    """The one text a proof or tactic is judged and sent as, or LeanTextError with the reason.

    The text is returned unchanged (canonical means: refused unless already so): UTF-8, at most
    `limit` characters, lines ended by LF only, and no NUL, other control character, BOM,
    bidi or other format control (Unicode category Cf), nor any space but U+0020 and tab (a
    no-break or ideographic space is no whitespace to Lean). Every reader downstream (the guard,
    the sorry check, the statement check, the rewards, the command sent to Lean) reads this
    text and splits it at "\\n" only.

    >>> canonical_proof("intro n\\n  simp")
    'intro n\\n  simp'
    >>> canonical_proof("simp -- x\\u2028#exit")
    Traceback (most recent call last):
    storage.lean_text.LeanTextError: the proof holds a line break Lean does not read as one (U+2028 LINE SEPARATOR); end lines with LF only
    """
    text = check_text(text, what, limit)
    if text.isascii():
        bad = next((c for c in text if c in "\r\x0b\x0c"), None)
    else:
        bad = next((c for c in text if c in _LINE_BREAKS or _unseen(c)), None)
    if bad is None:
        return text
    if bad in _LINE_BREAKS:
        raise LeanTextError(
            f"{what} holds a line break Lean does not read as one (U+{ord(bad):04X} {_LINE_BREAKS[bad]})",
            "end lines with LF only",
        )
    name = unicodedata.name(bad, unicodedata.category(bad))
    raise LeanTextError(
        f"{what} holds U+{ord(bad):04X} ({name}), which Lean does not read as a reader sees it",
        "remove it (spaces are U+0020, lines end with LF)",
    )


def _unseen(c: str) -> bool:
    """A format control (Cf: bidi controls, zero-width characters, the BOM), a surrogate, or a
    separator other than U+0020 (no-break, em, ideographic space; line and paragraph separators)."""
    if c.isascii():
        return False
    cat = unicodedata.category(c)
    return cat in ("Cf", "Cs", "Zl", "Zp") or (cat == "Zs" and c != " ")


# A component: an identifier (its characters: storage/lean_lexer.py ID_FIRST, ID_REST), a number
# (private names: `_private.M.0.x`), or «escaped» text without guillemets or newlines
# (Lean.Name.toString's escaping).
_COMPONENT = rf"(?:[{ID_FIRST}][{ID_REST}]*|[0-9]+|«[^«»\n]+»)"
_LEAN_NAME = re.compile(rf"{_COMPONENT}(?:\.{_COMPONENT})*")
_PLAIN = re.compile(rf"[{ID_FIRST}][{ID_REST}]*|[0-9]+")
_KEYWORDS = frozenset(
    "at by do else end fun have if in let match then theorem lemma def example axiom from show with where "
    "open import namespace section variable instance structure class inductive opaque universe".split()
)


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


def check_name(name: str) -> None:
    """LeanTextError unless `name` is one Lean name (`Foo.bar'`, `Foo.«x y»`)."""
    problem = lean_name_problem(name) if isinstance(name, str) else "is not text"
    if problem:
        raise LeanTextError(f"the name {str(name)[:80]!r} {problem}", "give a name such as `Foo.bar` or `Foo.«x y»`")


def split_name(name: str) -> list[str]:
    """The components of a dotted name, « » removed (`Foo.«a.b».c` -> Foo, a.b, c)."""
    return [p[1:-1] if p.startswith("«") else p for p in re.findall(_COMPONENT, name)]


def quote_name(name: str) -> str:
    """`name` as Lean's `Name.toString` writes it: a component that is not a plain identifier,
    or is a keyword, in « » (so it can never be read as anything but a name)."""
    check_name(name)
    return ".".join(p if _PLAIN.fullmatch(p) and p not in _KEYWORDS else f"«{p}»" for p in split_name(name))


def check_file_path(path: str) -> None:
    """LeanTextError unless `path` is a relative path that stays inside its repository
    (`Foo/Bar.lean`): no absolute path, no `..`, no NUL or control characters."""
    problem = control_problem(path) if isinstance(path, str) else "is not text"
    if problem:
        raise LeanTextError(f"the file path {str(path)[:80]!r} {problem}", "give a path relative to its root")
    parts = path.replace("\\", "/").split("/")
    if not path or path.startswith(("/", "\\")) or re.match(r"[A-Za-z]:", path) or ".." in parts or "" in parts:
        raise LeanTextError(f"the file path {path[:80]!r} leaves the repository", "give a path relative to its root")


# Words that start a command in Lean 4 core and Mathlib. A keyword is never an identifier,
# so one of these standing alone in a signature starts a second command, or wraps the
# declaration in one that changes how Lean checks it (`set_option ... in`).
COMMAND_WORDS = frozenset(
    "theorem lemma def example instance abbrev axiom opaque structure class inductive "
    "coinductive variable universe namespace section end open export import set_option "
    "attribute elab elab_rules macro macro_rules syntax declare_syntax_cat notation infix "
    "infixl infixr prefix postfix initialize builtin_initialize run_cmd run_elab run_meta "
    "run_tac by_elab mutual deriving omit include add_decl_doc register_option".split()
)
_DECLARATIONS = ("theorem", "lemma", "example", "def", "instance", "abbrev")
_MODIFIERS = {"private", "protected", "noncomputable", "nonrec", "unsafe", "partial", "scoped", "local"}
_OPEN, _CLOSE = "([{⦃⟨", ")]}⦄⟩"


@dataclass(frozen=True)
class Statement:
    """One declaration's signature in validated parts: `KEYWORD NAME BINDERS : TYPE`."""

    keyword: str  # theorem | lemma | example | def | instance | abbrev
    name: str  # as written (relative to the header's namespace); "" for `example`
    binders: str  # the text between the name and the top-level `:` ("" if none)
    type: str  # the text after the top-level `:` ("" when the signature has none)

    def declaration(self) -> str:
        """The declaration rebuilt from its parts (`lemma` as `theorem`, which needs no Mathlib;
        attributes and modifiers are not carried over: they do not change what is proved)."""
        if not self.name or not self.type:
            raise LeanTextError(f"the statement `{self.keyword} {self.name}` names no constant and type to prove")
        keyword = "theorem" if self.keyword == "lemma" else self.keyword
        binders = f" {self.binders}" if self.binders else ""
        return f"{keyword} {quote_name(self.name)}{binders} : {self.type}"

    def proposition(self) -> str:
        """The statement as one term, `∀ BINDERS, TYPE`, for checking a constant against it."""
        return f"∀ {self.binders}, {self.type}" if self.binders else self.type


def statement_problem(statement: str, full_name: str | None = None) -> str | None:
    """A reason when `statement` is not one declaration's signature (LeanDojo's
    `theorem_statement`: the declaration from its modifiers to the proof, so it may end in `:=`),
    or (given `full_name`) declares another constant than `full_name` (`name_mismatch`).

    Imports check every statement, so a fast textual pass decides first (wt-store's, measured
    on 20,000 theorems): what it accepts is accepted; what it refuses (a command word, a `:=`
    before the end, a `where`) is read again with the lexer, which clears a command word inside
    a string or comment and nested attributes, and refuses a body."""
    if _fast_statement_problem(statement) is not None:
        try:
            _parse_statement(statement)
        except LeanTextError as e:
            return e.reason
    return name_mismatch(statement, full_name) if full_name is not None else None


_DECLARED = re.compile(r"\s+((?:«[^«»\n]*»|[^\s«:({\[⦃⟨])+)")


def declared_name(statement: str) -> str:
    """The name `statement` declares, as written (`theorem foo.bar (n : Nat) : ...` -> `foo.bar`;
    "" for `example`); LeanTextError for a statement `parse_statement` refuses."""
    head = _DECL_HEAD.match(statement) if isinstance(statement, str) else None
    m = _DECLARED.match(statement, head.end()) if head and not head.group().endswith("example") else None
    if m and lean_name_problem(m.group(1)) is None:
        return m.group(1)
    return parse_statement(statement).name


def name_mismatch(statement: str, full_name: str) -> str | None:
    """A reason when the constant `statement` declares cannot be `full_name`: the declared name's
    parts (a leading `_root_.` dropped) must end `full_name`'s (`theorem add_zero'` in
    `namespace NatBasics` is `NatBasics.add_zero'`; a private one `_private.M.0.NatBasics.add_zero'`).
    A verdict is read about the constant the proof command declares; a `full_name` naming
    another constant would have the store credit a proof to a theorem it is not about."""
    try:
        name = declared_name(statement)
    except LeanTextError as e:
        return e.reason
    declared = split_name(name)
    while declared and declared[0] == "_root_":
        declared = declared[1:]
    if not declared or split_name(full_name)[-len(declared) :] != declared:
        return f"declares `{name}`, which is not the end of full_name `{full_name[:120]}`"
    return None


_SECOND_COMMAND = re.compile(
    rf"(?<![{ID_REST}.])(?:{'|'.join(sorted(COMMAND_WORDS))})(?![{ID_REST}])|(?<![{ID_REST}])#[A-Za-z_][A-Za-z_0-9]+!?"
)
_DECL_HEAD = re.compile(
    r"\s*(?:@\[(?:[^\[\]]|\[[^\[\]]*\])*\]\s*)*"  # attributes (one level of brackets inside)
    r"(?:(?:private|protected|noncomputable|nonrec|unsafe|partial|scoped|local)\s+)*"
    r"(?:theorem|lemma|example|def|instance|abbrev)\b"
)
# The words as plain text: a search without lookbehinds, twice as fast, rules out most statements.
_ANY_COMMAND_WORD = re.compile("|".join(sorted(COMMAND_WORDS, key=len, reverse=True)) + "|#")


def _fast_statement_problem(statement: str) -> str | None:
    """The textual pass: control characters, length, a declaration head, no command word after it."""
    problem = control_problem(statement, lines=True)
    if problem:
        return problem
    if len(statement) > MAX_STATEMENT_CHARS:
        return f"is {len(statement)} characters long (at most {MAX_STATEMENT_CHARS})"
    head = _DECL_HEAD.match(statement)
    if head is None:
        return "does not start with a declaration (`theorem`, `lemma`, `def`, ...)"
    if _ANY_COMMAND_WORD.search(statement, head.end()) and _SECOND_COMMAND.search(statement, head.end()):
        return "holds a second command"
    signature = statement.rstrip()
    signature = signature[:-2] if signature.endswith(":=") else signature
    if ":=" in signature or _WHERE.search(signature, head.end()) or _BODY_HINT.search(signature, head.end()):
        return "may hold a body"  # e.g. `:= by native_decide`: the lexer decides
    return None


_WHERE = re.compile(rf"(?<![{ID_REST}.])where(?![{ID_REST}])")
# Bodies without `:=` (`_body_without_assign` decides): a `|` first on a line, termination hints.
_BODY_HINT = re.compile(rf"\n[ \t]*\||(?<![{ID_REST}.])(?:termination_by|decreasing_by)(?![{ID_REST}])")


def is_statement(statement: str | None, full_name: str | None = None) -> bool:
    """True when `statement` is acceptable (None is: LeanDojo writes null for some), and declares
    `full_name` when given."""
    return statement is None or statement_problem(statement, full_name) is None


def parse_statement(statement: str) -> Statement:
    """Split one declaration's signature (`theorem foo (n : Nat) : n + 0 = n`, optionally after a
    doc comment, `@[attr]` and modifiers, optionally ending in `:=`) into parts; LeanTextError for
    anything `statement_problem` refuses, and for a body, unbalanced brackets or a missing type.

    Remembered per text (a Statement is immutable): every check of a theorem builds its commands
    from it three times, and lexing was most of the verifier's own time (benchmarks/README.md)."""
    if isinstance(statement, str):
        return _parse_statement_text(statement)
    return _parse_statement(statement)  # not text: refused there, with the reason


@functools.lru_cache(maxsize=8192)
def _parse_statement_text(statement: str) -> Statement:
    return _parse_statement(statement)


def _parse_statement(statement) -> Statement:
    text, toks = _declaration_tokens(statement)
    if toks and toks[-1].text == ":=":
        toks = toks[:-1]
    has_name = toks[0].text != "example" and len(toks) > 1 and toks[1].kind == "ident"
    if toks[0].text != "example" and not has_name:
        raise LeanTextError(f"the statement's `{toks[0].text}` is not followed by a name", "give `theorem NAME : TYPE`")
    start = 2 if has_name else 1
    depth, colon = 0, None
    for k in range(start, len(toks)):
        t = toks[k].text if toks[k].kind == "symbol" else ""
        depth += (t in _OPEN) - (t in _CLOSE)
        if depth < 0:
            break
        if depth == 0 and t == ":=":
            raise LeanTextError("the statement holds a body (`:=` before its end)", "give the signature only")
        if depth == 0 and _body_without_assign(text, toks, k):
            raise LeanTextError(
                f"the statement holds a body (`{toks[k].text}` after its type)", "give the signature only"
            )
        if depth == 0 and t == ":" and colon is None:
            colon = k
    if depth != 0:
        raise LeanTextError("the statement's brackets do not balance", "give one declaration's signature")
    if colon is None or colon == len(toks) - 1:
        raise LeanTextError("the statement has no type after a top-level `:`", "give `theorem NAME ... : TYPE`")
    name = toks[1].text if has_name else ""
    if name:
        check_name(name)
    return Statement(toks[0].text, name, _span(text, toks, start, colon), _span(text, toks, colon + 1, len(toks)))


_BODY_WORDS = frozenset({"where", "termination_by", "decreasing_by"})
_TERM_OPENERS = frozenset({"fun", "λ", "match", "with"})


def _body_without_assign(text: str, toks: list[Token], k: int) -> bool:
    """True when token k (at bracket depth 0) starts a body that needs no `:=`: a `where`
    block, `termination_by`/`decreasing_by`, or equations (`| 0 => rfl`: a `|` first on its
    line, then a `=>`, with no `fun`/`match` before it, so `|a|` and `fun | 0 => ...` are terms)."""
    tok = toks[k]
    if tok.kind == "ident":
        return tok.text in _BODY_WORDS
    if tok.text != "|" or text[text.rfind("\n", 0, tok.start) + 1 : tok.start].strip():
        return False
    if any(t.text in _TERM_OPENERS for t in toks[:k]):  # alternatives of a `fun`/`match` in the type
        return False
    for later in toks[k + 1 :]:
        if later.text in _TERM_OPENERS:
            return False
        if later.text == "=>":
            return True
    return False


def _declaration_tokens(statement) -> tuple[str, list[Token]]:
    """(text, tokens from the declaration keyword on); LeanTextError with the importer's reasons."""
    if isinstance(statement, str):
        problem = control_problem(statement, lines=True)
        if problem:
            raise LeanTextError(problem)
    text = check_text(statement, "the statement", MAX_STATEMENT_CHARS)
    lexed = lex(text)
    if lexed.error:
        raise LeanTextError(f"does not parse: {lexed.error}", "give one declaration's signature")
    toks = list(lexed.tokens)
    while toks and toks[0].text == "@[":  # attributes, brackets nested inside
        depth, k = 1, 1
        while k < len(toks) and depth:
            depth += (toks[k].text in ("[", "@[")) - (toks[k].text == "]")
            k += 1
        toks = toks[k:]
    while toks and toks[0].kind == "ident" and toks[0].text in _MODIFIERS:
        toks = toks[1:]
    if not toks or toks[0].text not in _DECLARATIONS:
        raise LeanTextError("does not start with a declaration (`theorem`, `lemma`, `def`, ...)")
    second = next((t for t in toks[1:] if is_command(t) or (t.kind == "ident" and t.text in COMMAND_WORDS)), None)
    if second is not None:
        raise LeanTextError(f"holds a second command (`{second.text}`)", "give one declaration's signature")
    return text, toks


def _span(text: str, toks: list[Token], a: int, b: int) -> str:
    """The source text spanned by tokens a..b-1 (comments inside kept, as Lean reads them)."""
    return text[toks[a].start : toks[b - 1].end] if a < b else ""


def challenge_problem(statement: str) -> str | None:
    """Why leanprover/comparator could not take `statement` as a challenge, or None: comparator
    checks its `theorem_names` as theorems (comparator 19e111e, Comparator/Axioms.lean: "Solution
    constant is not a theorem"), so a `def`, `instance` or `abbrev` statement would be rejected
    whatever its proof (the gold check, tasks/lean/gold.py). Imports refuse it, named."""
    try:
        keyword = _parse_statement(statement).keyword
    except LeanTextError as e:
        return e.reason
    if keyword not in ("theorem", "lemma"):
        return (
            f"is a `{keyword}`, and the gold check (comparator) checks theorems only: "
            "a proof of it could never be kernel-replayed"
        )
    return None


# Words that start a command when they start a line of a tactic. `open ... in` and
# `set_option ... in` are tactics, so they are not here.
_TACTIC_COMMAND_WORDS = COMMAND_WORDS - {"open", "set_option"}
_TACTIC_HINT = re.compile(
    rf"#[A-Za-z_]|(?:^|\n)[ \t]*(?:{'|'.join(sorted(_TACTIC_COMMAND_WORDS, key=len, reverse=True))})(?![{ID_REST}])"
)


def tactic_problem(tactic: str) -> str | None:
    """A reason when a traced tactic holds a command (`#eval ...`, or a line starting with
    `theorem`, `axiom`, ...): a replayed tactic reaches Lean inside a proof, and a command there
    would run (issue 26 C). A `#s` (cardinality), a command word in a string or comment is fine.

    >>> tactic_problem('simp\\n#eval IO.Process.run {cmd := "id"}')
    'holds a command (`#eval`)'
    >>> tactic_problem('simp [#s] -- #eval') is None
    True
    """
    if not _TACTIC_HINT.search(tactic):
        return None
    for tok in lex(tactic).tokens:
        if is_command(tok):
            return f"holds a command (`{tok.text}`)"
        line_start = not tactic[tactic.rfind("\n", 0, tok.start) + 1 : tok.start].strip()
        if tok.kind == "ident" and line_start and tok.text in _TACTIC_COMMAND_WORDS:
            return f"holds a command (`{tok.text}`)"
    return None
