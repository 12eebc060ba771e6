r"""Lean text as Lean lexes it: tokens, `sorry`, names and statements that may reach Lean.

Every check Dojoflow makes on Lean text (the pre-filter on model output, the one
definition of `sorry`, the validation of imported statements and names, the commands
sent to Lean) reads tokens from `lex`, never substrings: a `--` inside a string, a char
literal or a «guillemet» identifier is no comment, `/- /- -/ -/` nests, `_root_.sorryAx`
and `«sorryAx»` are `sorryAx`. The rules follow Lean 4's own lexer
(lean4 src/Lean/Parser/Basic.lean: `whitespace` (nested `/-` `-/`, `--` to the end of
the line), `strLitFnAux`/`quotedCharCoreFn` (escapes `\\ \" \' \n \t \r \x.. \u....`),
`charLitFnAux`, `identFnAux` (`«...»` parts, `isIdFirst`/`isIdRest`), `rawStrLitFnAux`
(`r"..."`, `r#"..."#`), and `interpolatedStr` (`s!"..{term}.."`, whose `{...}` is code).

It lives in storage/ because both the importer (storage/leandojo.py) and the Lean
backends (tasks/lean/) validate with it. Pure functions, no Lean.

    python -c "from storage.lean_text import lex; print(lex('exact «sorryAx» _ -- x'))"
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

MAX_PROOF_CHARS = 20_000
"""Longest proof text sent to Lean: longer model output is refused, not truncated."""
MAX_STATEMENT_CHARS = 20_000
"""Longest theorem statement accepted on import or sent to Lean."""
SORRY_NAMES = frozenset({"sorry", "admit", "sorryAx"})
"""The one definition of `sorry`: any of these as a Lean identifier (after «» and `_root_.`)."""


class LeanTextError(ValueError):
    """Text that must not reach Lean; the message says what is wrong and how to fix it."""


@dataclass(frozen=True)
class Token:
    kind: str  # ident | command (#word) | string | char | number | symbol
    text: str  # as written
    name: str = ""  # ident: the name Lean resolves (« » removed, `_root_.` dropped); command: the word
    start: int = 0  # offsets of the token in the text it was read from
    end: int = 0


@dataclass(frozen=True)
class Lexed:
    tokens: tuple[Token, ...]
    error: str | None = None  # an unterminated comment, string or «, as Lean would report it


_SYMBOLS = (":=", "::", "@[", "=>", "<;>", "..", "←", "→", "↔")
_ESCAPE = re.compile(r"\\(?:[\\\"'ntr]|x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|\n\s*)")


def _id_first(c: str) -> bool:
    # Lean's isIdFirst: letters, `_`, and letter-like symbols; λ Π Σ are keywords' symbols.
    return c == "_" or (c.isalpha() and c not in "λΠΣ") or _letter_like(c)


def _id_rest(c: str) -> bool:
    return _id_first(c) or c.isdigit() or c in "'!?" or _subscript(c)


def _letter_like(c: str) -> bool:
    o = ord(c)
    return (
        (0x3B1 <= o <= 0x3C9 and o != 0x3BB)
        or (0x391 <= o <= 0x3A9 and o not in (0x3A0, 0x3A3))
        or (0x1F00 <= o <= 0x1FFE or 0x2100 <= o <= 0x214F or 0x1D49C <= o <= 0x1D59F)
    )


def _subscript(c: str) -> bool:
    o = ord(c)
    return 0x2080 <= o <= 0x2089 or 0x2090 <= o <= 0x209C or 0x1D62 <= o <= 0x1D6A


def lex(text: str) -> Lexed:
    """The tokens of `text` as Lean's lexer splits them (comments and whitespace dropped)."""
    out: list[Token] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
        elif text.startswith("--", i):
            j = text.find("\n", i)
            i = n if j < 0 else j + 1
        elif text.startswith("/-", i):
            i = _block_comment(text, i)
            if i < 0:
                return Lexed(tuple(out), "an unterminated block comment `/-` (it would swallow what follows)")
        elif c == '"':
            j = _string_end(text, i)
            if j < 0:
                return Lexed(tuple(out), "an unterminated string literal (it would swallow what follows)")
            out.append(Token("string", text[i:j], start=i, end=j))
            i = j
        elif c == "'" and _char_end(text, i) > 0:
            j = _char_end(text, i)
            out.append(Token("char", text[i:j], start=i, end=j))
            i = j
        elif c == "r" and re.match(r'r#*"', text[i:]):
            j = _raw_string_end(text, i)
            if j < 0:
                return Lexed(tuple(out), "an unterminated raw string literal (it would swallow what follows)")
            out.append(Token("string", text[i:j], start=i, end=j))
            i = j
        elif _id_first(c) or c == "«":
            j, parts = _ident(text, i)
            if j < 0:
                return Lexed(tuple(out), "an unterminated «identifier» (it would swallow what follows)")
            out.append(Token("ident", text[i:j], resolved_name(parts), i, j))
            i = j
            if text[i - 1] == "!" and i < n and text[i] == '"':  # s!"..{code}..": the holes are code
                j, holes = _interpolated_end(text, i)
                if j < 0:
                    return Lexed(tuple(out), "an unterminated interpolated string (it would swallow what follows)")
                out.append(Token("string", text[i:j], start=i, end=j))
                for hole in holes:
                    inner = lex(hole)
                    out.extend(inner.tokens)  # offsets of these are inside the hole
                    if inner.error:
                        return Lexed(tuple(out), inner.error)
                i = j
        elif c == "#" and i + 1 < n and _id_first(text[i + 1]):
            j, parts = _ident(text, i + 1)
            out.append(Token("command", text[i:j], "#" + ".".join(parts), i, j))
            i = j
        elif c.isdigit():
            j = i
            while j < n and (text[j].isalnum() or text[j] in "._"):
                j += 1
            out.append(Token("number", text[i:j], start=i, end=j))
            i = j
        else:
            sym = next((s for s in _SYMBOLS if text.startswith(s, i)), c)
            out.append(Token("symbol", sym, start=i, end=i + len(sym)))
            i += len(sym)
    return Lexed(tuple(out))


def _block_comment(text: str, i: int) -> int:
    """End of the (nested) block comment starting at `i`, or -1 if it never ends."""
    depth, j = 0, i
    while j < len(text):
        if text.startswith("/-", j):
            depth, j = depth + 1, j + 2
        elif text.startswith("-/", j):
            depth, j = depth - 1, j + 2
            if depth == 0:
                return j
        else:
            j += 1
    return -1


def _string_end(text: str, i: int) -> int:
    j = i + 1
    while j < len(text):
        if text[j] == "\\":
            m = _ESCAPE.match(text, j)
            j += len(m.group(0)) if m else 2
        elif text[j] == '"':
            return j + 1
        else:
            j += 1
    return -1


def _interpolated_end(text: str, i: int) -> tuple[int, list[str]]:
    """(end, code of each `{...}` hole) of the interpolated string at `i`; end -1 if unterminated.
    A hole is code up to its matching `}`; strings inside it are skipped whole (Lean's
    `interpolatedStrFn`)."""
    holes, j, n = [], i + 1, len(text)
    while j < n:
        c = text[j]
        if c == "\\":
            j += 2
        elif c == '"':
            return j + 1, holes
        elif c == "{":
            depth, k = 1, j + 1
            while k < n and depth:
                if text[k] == '"':
                    end = _string_end(text, k)
                    if end < 0:
                        return -1, holes
                    k = end
                    continue
                depth += {"{": 1, "}": -1}.get(text[k], 0)
                k += 1
            if depth:
                return -1, holes
            holes.append(text[j + 1 : k - 1])
            j = k
        else:
            j += 1
    return -1, holes


def _char_end(text: str, i: int) -> int:
    """End of a char literal at `i` ('a', '\\n', '\\x41', '"'), or -1 if `'` starts none."""
    m = _ESCAPE.match(text, i + 1)
    j = i + 1 + (len(m.group(0)) if m else 1)
    return j + 1 if j < len(text) and text[j] == "'" and text[i + 1] != "'" else -1


def _raw_string_end(text: str, i: int) -> int:
    hashes = len(re.match(r"r(#*)", text[i:]).group(1))
    close = '"' + "#" * hashes
    j = text.find(close, i + 2 + hashes)
    return -1 if j < 0 else j + len(close)


def _ident(text: str, i: int) -> tuple[int, list[str]]:
    """(end, name parts) of the dotted identifier at `i`; end -1 for an unterminated «."""
    parts, j = [], i
    while True:
        if j < len(text) and text[j] == "«":
            k = text.find("»", j + 1)
            if k < 0:
                return -1, parts
            parts.append(text[j + 1 : k])
            j = k + 1
        else:
            k = j
            while k < len(text) and _id_rest(text[k]):
                k += 1
            parts.append(text[j:k])
            j = k
        if j + 1 < len(text) and text[j] == "." and (_id_first(text[j + 1]) or text[j + 1] == "«"):
            j += 1
            continue
        return j, parts


def resolved_name(parts: list[str]) -> str:
    """The name as written, « » removed and a leading `_root_` dropped (it names the same constant)."""
    while parts and parts[0] == "_root_":
        parts = parts[1:]
    return ".".join(parts)


def is_sorry(text: str) -> bool:
    """True when the text uses `sorry`, `admit` or `sorryAx` anywhere Lean would read it
    (`refine ⟨sorry, h⟩`, `_root_.sorryAx`, `«sorry»`), not in a comment or a string. An
    unterminated comment or string counts as sorry: nothing after it can be trusted."""
    lexed = lex(text)
    return lexed.error is not None or any(t.kind == "ident" and t.name in SORRY_NAMES for t in lexed.tokens)


# -- names and statements (data from imports, validated before any of it reaches Lean) ------

_PLAIN_PART = re.compile(r"[^\W\d][\w'!?]*\Z", re.UNICODE)
_KEYWORDS = frozenset(
    "at by do else end fun have if in let match then theorem lemma def example axiom "
    "from show with where open import namespace section variable instance structure".split()
)


def check_text(text: str, what: str, limit: int) -> None:
    """LeanTextError unless `text` is valid UTF-8 text Lean may be given: no NUL or other
    control characters (tab and newline are fine), at most `limit` characters."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as e:
            raise LeanTextError(f"{what} is not valid UTF-8 ({e.reason} at byte {e.start}); send UTF-8 text") from None
    if not isinstance(text, str):
        raise LeanTextError(f"{what} is a {type(text).__name__}, not text; give Lean text")
    if len(text) > limit:
        raise LeanTextError(f"{what} is {len(text)} characters long, over the limit of {limit}; shorten it")
    for k, c in enumerate(text):
        if c == "\x00":
            raise LeanTextError(f"{what} holds a NUL character at offset {k}; remove it")
        if unicodedata.category(c) in ("Cc", "Cs") and c not in "\n\t\r":
            raise LeanTextError(f"{what} holds the control character {c!r} at offset {k}; remove it")


def check_name(name: str) -> None:
    """LeanTextError unless `name` is one Lean name (`Foo.bar'`, `Foo.«x y»`): no spaces,
    newlines or commands outside «», no `»` inside one."""
    check_text(name, f"the name {name[:80]!r}", 1000)
    if not name or name != name.strip():
        raise LeanTextError(f"the name {name[:80]!r} is empty or padded with spaces; give a Lean name")
    lexed = lex(name)
    one = len(lexed.tokens) == 1 and lexed.tokens[0].kind == "ident" and lexed.tokens[0].end == len(name)
    if lexed.error or not one or any(not p or "\n" in p or "\r" in p for p in split_name(name)):
        raise LeanTextError(
            f"the name {name[:80]!r} is not one Lean name; give a name such as `Foo.bar` or `Foo.«x y»`"
        )


def check_file_path(path: str) -> None:
    """LeanTextError unless `path` is a relative path that stays inside its repository
    (`Foo/Bar.lean`): no absolute path, no `..`, no NUL or control characters."""
    check_text(path, f"the file path {path[:80]!r}", 4096)
    parts = path.replace("\\", "/").split("/")
    if not path or path.startswith(("/", "\\")) or re.match(r"[A-Za-z]:", path) or ".." in parts or "" in parts:
        raise LeanTextError(f"the file path {path[:80]!r} leaves the repository; give a path relative to its root")


def split_name(name: str) -> list[str]:
    """The components of a dotted name, « » removed (`Foo.«a.b».c` -> Foo, a.b, c)."""
    parts, i = [], 0
    while i <= len(name):
        if name.startswith("«", i):
            k = name.find("»", i + 1)
            if k < 0:
                return [*parts, name[i:]]
            parts.append(name[i + 1 : k])
            i = k + 1
            if i < len(name) and name[i] != ".":
                return [*parts, name[i:]]
            i += 1
        else:
            k = name.find(".", i)
            k = len(name) if k < 0 else k
            parts.append(name[i:k])
            i = k + 1
    return parts


def quote_name(name: str) -> str:
    """`name` as Lean's `Name.toString` writes it: a component that is not a plain identifier,
    or is a keyword, in « » (so it can never be read as anything but a name)."""
    check_name(name)
    return ".".join(
        p if _PLAIN_PART.match(p) and p not in _KEYWORDS and _id_first(p[0]) else f"«{p}»" for p in split_name(name)
    )


@dataclass(frozen=True)
class Statement:
    """A theorem's signature split into validated parts: `theorem NAME BINDERS : TYPE`."""

    name: str  # the declared name as written (short, relative to the header's namespace)
    binders: str  # the text between the name and the top-level `:` ("" if none)
    type: str  # the text after the top-level `:`

    def declaration(self) -> str:
        """The declaration rebuilt from its parts (no attributes or modifiers carried over)."""
        binders = f" {self.binders}" if self.binders else ""
        return f"theorem {quote_name(self.name)}{binders} : {self.type}"

    def proposition(self) -> str:
        """The statement as one term, `∀ BINDERS, TYPE`, for checking a constant against it."""
        return f"∀ {self.binders}, {self.type}" if self.binders else self.type


# Words that begin another command: a statement holding one is two commands.
_COMMAND_WORDS = frozenset(
    "theorem lemma def example axiom abbrev instance opaque structure class inductive namespace section end "
    "import open universe variable set_option macro macro_rules syntax elab notation initialize run_cmd @[".split()
)
_MODIFIERS = {"private", "protected", "noncomputable", "nonrec"}
_OPEN, _CLOSE = "([{⦃⟨", ")]}⦄⟩"


def parse_statement(statement: str) -> Statement:
    """Split one declaration's signature (`theorem foo (n : Nat) : n + 0 = n`, optionally after a
    doc comment, `@[attr]` and modifiers) into parts; LeanTextError for anything else: a second
    command, a `#command`, a body (`:=` at top level), unbalanced brackets, a missing type."""
    check_text(statement, "the statement", MAX_STATEMENT_CHARS)
    lexed = lex(statement)
    if lexed.error:
        raise LeanTextError(f"the statement does not parse: {lexed.error}; give one declaration's signature")
    toks = list(lexed.tokens)
    if toks and toks[0].text == "@[":
        close = next((k for k, t in enumerate(toks) if t.text == "]"), None)
        if close is None:
            raise LeanTextError("the statement's attribute `@[` is never closed; give one declaration's signature")
        toks = toks[close + 1 :]
    while toks and toks[0].kind == "ident" and toks[0].text in _MODIFIERS:
        toks = toks[1:]
    if len(toks) < 4 or toks[0].text not in ("theorem", "lemma") or toks[1].kind != "ident":
        raise LeanTextError(
            f"the statement {statement[:80]!r} is not `theorem NAME ... : TYPE`; give one theorem's signature"
        )
    bad = next((t for t in toks[1:] if t.kind == "command" or t.text in _COMMAND_WORDS), None)
    if bad is not None:
        raise LeanTextError(f"the statement holds `{bad.text}`, which starts another command; give one signature")
    return _split_signature(statement, toks)


def _split_signature(statement: str, toks: list[Token]) -> Statement:
    depth, colon = 0, None
    for k, t in enumerate(toks[2:], start=2):
        if t.kind == "symbol" and t.text in _OPEN:
            depth += 1
        elif t.kind == "symbol" and t.text in _CLOSE:
            depth -= 1
            if depth < 0:
                break
        elif depth == 0 and t.text == ":=":
            raise LeanTextError("the statement holds a body (`:=`); give the signature only")
        elif depth == 0 and t.text == ":" and colon is None:
            colon = k
    if depth != 0:
        raise LeanTextError("the statement's brackets do not balance; give one declaration's signature")
    if colon is None or colon == len(toks) - 1:
        raise LeanTextError("the statement has no type after a top-level `:`; give `theorem NAME ... : TYPE`")
    name = toks[1].text
    check_name(name)
    return Statement(name, _between(statement, toks, 2, colon), _between(statement, toks, colon + 1, len(toks)))


def _between(statement: str, toks: list[Token], a: int, b: int) -> str:
    """The source text spanned by tokens a..b-1 (comments inside it kept, as Lean reads them)."""
    if a >= b:
        return ""
    return statement[toks[a].start : toks[b - 1].end]
