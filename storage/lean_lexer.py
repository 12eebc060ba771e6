r"""Lean text as Lean lexes it: tokens, and the one definition of `sorry`.

Every check Dojoflow makes on Lean text (the pre-filter on model output, the one
definition of `sorry`, the validation of imported statements and names, the commands
sent to Lean) reads tokens from `lex`, never substrings: a `--` inside a string, a char
literal or a «guillemet» identifier is no comment, `/- /- -/ -/` nests, `_root_.sorryAx`
and `«sorryAx»` are `sorryAx`. The rules follow Lean 4's own lexer
(lean4 src/Lean/Parser/Basic.lean: `whitespace` (nested `/-` `-/`, `--` to the end of
the line), `strLitFnAux`/`quotedCharCoreFn` (escapes `\\ \" \' \n \t \r \x.. \u....`),
`charLitFnAux`, `identFnAux` (`«...»` parts, `isIdFirst`/`isIdRest`), `rawStrLitFnAux`
(`r"..."`, `r#"..."#`), and `interpolatedStr` (`s!"..{term}.."`, whose `{...}` is code).

It lives in storage/ because the importer, the snapshot's sorry filter and the Lean
backends (tasks/lean/) all read Lean text with it. Pure functions, no Lean. What names and
statements may be is storage/lean_text.py.

    python -c "from storage.lean_lexer import lex; print(lex('exact «sorryAx» _ -- x'))"
"""

from __future__ import annotations

import re
from dataclasses import dataclass

SORRY_NAMES = frozenset({"sorry", "admit", "sorryAx"})
"""The one definition of `sorry`: any of these as a Lean identifier (after «» and `_root_.`)."""


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


def is_command(tok: Token) -> bool:
    """A `#word` token that starts a command (`#eval`, `#print`, `#exit`): `#` and an ASCII word
    of two characters or more. Mathlib's `#s` and `#α` (cardinality) are `#` and a term."""
    return tok.kind == "command" and re.fullmatch(r"#[A-Za-z_][A-Za-z_0-9]+!?", tok.text) is not None
