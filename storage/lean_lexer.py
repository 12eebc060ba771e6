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

# Lean's identifier characters (lean4 src/Init/Meta/Defs.lean `isLetterLike`, `isSubScriptAlnum`,
# `isIdFirst`, `isIdRest`; `Char.isAlpha`/`isDigit` are ASCII there, so Cyrillic or Arabic-Indic
# digits are no identifier or number to Lean, and none here).
_LETTER_LIKE = (
    "\u03b1-\u03ba\u03bc-\u03c9"  # lower Greek but λ
    "\u0391-\u039f\u03a1\u03a2\u03a4-\u03a9"  # upper Greek but Π and Σ
    "\u03ca-\u03fb\u1f00-\u1ffe\u2100-\u214f\U0001d49c-\U0001d59f"
    "\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u00ff\u0100-\u017f"  # Latin-1 but × ÷, Latin Extended-A
)
_SUBSCRIPT = "\u2080-\u2089\u2090-\u209c\u1d62-\u1d6a\u2c7c"
# The two as regex character-class bodies (storage/lean_text.py builds Lean names from them).
ID_FIRST = f"A-Za-z_{_LETTER_LIKE}"
ID_REST = f"{ID_FIRST}0-9'!?{_SUBSCRIPT}"
_ID_FIRST_RE = re.compile(f"[{ID_FIRST}]")
_ID_REST_RE = re.compile(f"[{ID_REST}]")

# `Char.isWhitespace` (lean4 src/Init/Data/Char/Basic.lean): space, tab, CR and LF only. Lean's
# `whitespace` (src/Lean/Parser/Basic.lean) refuses a tab and an isolated CR with an error;
# the proof's canonical text (storage/lean_text.py `canonical_proof`) has no CR at all.
_WHITESPACE = " \t\r\n"
# `isQuotableCharDefault` (Basic.lean): the escapes `\\ \" \' \r \n \t`; `\x` takes two hex
# digits, `\u` four (`quotedCharCoreFn`); an interpolated string also quotes `{`
# (src/Lean/Parser/StrInterpolation.lean `isQuotableCharForStrInterpolant`).
_QUOTABLE = "\\\"'rnt"
_HEX = "0123456789abcdefABCDEF"
_RAW_START = re.compile(r'r#*"')


def _id_first(c: str) -> bool:
    return _ID_FIRST_RE.match(c) is not None


def _id_rest(c: str) -> bool:
    return _ID_REST_RE.match(c) is not None


class _LexError(Exception):
    """Text Lean's tokenizer fails on. Lean reports it and resumes parsing at the failure's
    position (src/Lean/Parser/Module.lean `parseCommand`: on an error, parse again from `s.pos`,
    then a token at a time), which may lie inside what a tolerant reading called a comment or a
    string: so nothing after it can be trusted, and the text is refused."""


def lex(text: str) -> Lexed:
    """The tokens of `text` as Lean's tokenizer splits them (comments and whitespace dropped);
    `error` when Lean's tokenizer would fail on it (nothing after that point is read as Lean does)."""
    out: list[Token] = []
    try:
        _scan(text, 0, out, hole=False)
    except _LexError as e:
        return Lexed(tuple(out), str(e))
    return Lexed(tuple(out))


def _scan(text: str, i: int, out: list[Token], hole: bool) -> int:
    """Append the tokens from `i` on to `out`; in an interpolated string's `{...}` hole
    (`hole`), stop at its closing `}` (brackets counted as tokens) and return its position."""
    n, depth = len(text), 0
    while i < n:
        c = text[i]
        if c in _WHITESPACE:
            i += 1
        elif text.startswith("--", i):  # Basic.lean `whitespace`: `takeUntilFn (· = '\n')`
            j = text.find("\n", i)
            i = n if j < 0 else j + 1
        elif text.startswith("/-", i):  # nested (`finishCommentBlock`); `/--`, `/-!` end alike
            i = _block_comment(text, i)
            if i < 0:
                raise _LexError("an unterminated block comment `/-` (it would swallow what follows)")
        elif c == '"':
            i = _string(text, i, out)
        elif c == "'" and text[i + 1 : i + 2] != "'":  # Basic.lean `tokenFnAux`: `'` not before `'`
            j = _char_end(text, i)
            out.append(Token("char", text[i:j], start=i, end=j))
            i = j
        elif c in "0123456789":
            after_dot = bool(out) and out[-1].text == "." and out[-1].end == i
            j = _field_index_end(text, i) if after_dot else _number_end(text, i)
            out.append(Token("number", text[i:j], start=i, end=j))
            i = j
        elif c == "`" and i + 1 < n and (_id_first(text[i + 1]) or text[i + 1] == "«"):  # `nameLitAux`
            j, parts = _ident(text, i + 1)
            if j < 0:
                raise _LexError("an unterminated «identifier» (it would swallow what follows)")
            out.append(Token("name", text[i:j], resolved_name(parts), i, j))
            i = j
        elif c == "r" and _RAW_START.match(text, i):  # `isRawStrLitStart`, before identifiers
            j = _raw_string_end(text, i)
            if j < 0:
                raise _LexError("an unterminated raw string literal (it would swallow what follows)")
            out.append(Token("string", text[i:j], start=i, end=j))
            i = j
        elif _id_first(c) or c == "«":
            j, parts = _ident(text, i)
            if j < 0:
                raise _LexError("an unterminated «identifier» (it would swallow what follows)")
            out.append(Token("ident", text[i:j], resolved_name(parts), i, j))
            i = j
        elif c == "#" and i + 1 < n and _id_first(text[i + 1]):
            j, parts = _ident(text, i + 1)
            out.append(Token("command", text[i:j], "#" + ".".join(parts), i, j))
            i = j
        elif text.startswith(_PREIMAGE, i) and _preimage_is_safe(text, i + len(_PREIMAGE)):
            out.append(Token("symbol", _PREIMAGE, start=i, end=i + len(_PREIMAGE)))
            i += len(_PREIMAGE)
        else:
            sym = next((s for s in _SYMBOLS if text.startswith(s, i)), c)
            if hole and sym == "}" and depth == 0:
                return i
            if hole:
                depth += (sym == "{") - (sym == "}")
            out.append(Token("symbol", sym, start=i, end=i + len(sym)))
            i += len(sym)
    if hole:
        raise _LexError("an unterminated interpolated string (it would swallow what follows)")
    return i


_PREIMAGE = "⁻¹'"


def _preimage_is_safe(text: str, j: int) -> bool:
    """Whether `⁻¹'` (Mathlib's preimage, `f ⁻¹' s`) may be read as one token. With Mathlib's
    tokens it is one; without them Lean reads `⁻¹` and then a char literal `' X` that fails after
    X (`charLitFnAux`) and resumes parsing there. Read as a token only where both readings go
    on alike: one space, then `(` or an identifier without `'`, after whose first character
    Lean's resumed reading meets nothing ours does not."""
    if text[j : j + 1] != " " or j + 1 >= len(text):
        return False
    c = text[j + 1]
    if c == "(":
        return True
    if not _id_first(c):
        return False
    k = j + 1
    while k < len(text) and (_id_rest(text[k]) or (text[k] == "." and k + 1 < len(text) and _id_first(text[k + 1]))):
        if text[k] == "'":
            return False
        k += 1
    return True


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


def _escape_end(text: str, j: int, quotable: str, gap: bool) -> int:
    """End of the escape whose `\\` is at `j` (Basic.lean `quotedCharCoreFn`); a string's gap
    `\\` newline whitespace* holds exactly one newline (`stringGapFn`)."""
    c = text[j + 1 : j + 2]
    if c and c in quotable:
        return j + 2
    if c in ("x", "u"):
        k = j + 2 + (2 if c == "x" else 4)
        if len(text) >= k and all(h in _HEX for h in text[j + 2 : k]):
            return k
        raise _LexError("an invalid escape sequence in a literal (Lean stops reading there)")
    if gap and c == "\n":
        k = j + 2
        while k < len(text) and text[k] in _WHITESPACE:
            if text[k] == "\n":
                raise _LexError("a string gap with a second newline (Lean stops reading there)")
            k += 1
        return k
    raise _LexError("an invalid escape sequence in a literal (Lean stops reading there)")


def _string(text: str, i: int, out: list[Token]) -> int:
    """A string literal at `i` (Basic.lean `strLitFnAux`), appended to `out`; its end.

    Where Lean reads a string as interpolated (`s!`, `f!`, `m!`, `throwError`, ..., with or
    without a space before it: `syntax "s!" interpolatedStr(term)` has no `noWs`,
    Init/Data/ToString/Macro.lean; src/Lean/Exception.lean) its `{...}` holes are code. Which
    keyword takes an interpolated string is open-ended, so every string holding a `{` is also
    read as interpolated (StrInterpolation.lean `interpolatedStrFn`): both readings must end at
    the same `"` (else one of them hides text the other runs), and the holes' tokens are judged
    as code either way."""
    j = i + 1
    while True:
        if j >= len(text):
            raise _LexError("an unterminated string literal (it would swallow what follows)")
        c = text[j]
        if c == '"':
            j += 1
            break
        j = _escape_end(text, j, _QUOTABLE, gap=True) if c == "\\" else j + 1
    out.append(Token("string", text[i:j], start=i, end=j))
    if "{" in text[i:j]:
        holes: list[Token] = []
        if _interpolated_end(text, i, holes) != j:
            raise _LexError(
                "a string literal whose `{` Lean reads as code when the string is interpolated, "
                "ending elsewhere than the plain string"
            )
        out.extend(holes)
    return j


def _interpolated_end(text: str, i: int, holes: list[Token]) -> int:
    """End of the interpolated string at `i` (`interpolatedStrFn`), its holes' tokens appended
    to `holes`: a hole is a term, read up to its closing `}`."""
    j = i + 1
    while j < len(text):
        c = text[j]
        if c == '"':
            return j + 1
        if c == "\\":
            j = _escape_end(text, j, _QUOTABLE + "{", gap=True)
        elif c == "{":
            j = _scan(text, j + 1, holes, hole=True) + 1
        else:
            j += 1
    raise _LexError("an unterminated interpolated string (it would swallow what follows)")


def _char_end(text: str, i: int) -> int:
    """End of the char literal at `i` (Basic.lean `charLitFnAux`: one character, or an escape,
    then `'`); a `'` that starts none is an error Lean resumes parsing after, mid-text."""
    if i + 1 >= len(text):
        raise _LexError("a `'` that starts no character literal (Lean stops reading there)")
    j = _escape_end(text, i + 1, _QUOTABLE, gap=False) if text[i + 1] == "\\" else i + 2
    if text[j : j + 1] != "'":
        raise _LexError("a `'` that starts no character literal (Lean stops reading there)")
    return j + 1


def _digits_end(text: str, j: int, digits: str, need: bool) -> int:
    """Basic.lean `takeDigitsFn`: digits and `_`; after a `_` (or where `need`) a digit must follow."""
    while j < len(text) and (text[j] == "_" or text[j] in digits):
        need = text[j] == "_"
        j += 1
    if need:
        raise _LexError("a number missing its digits (Lean stops reading there)")
    return j


def _number_end(text: str, i: int) -> int:
    """End of the number at `i` (Basic.lean `numberFnAux`, `decimalNumberFn`): `0b`/`0o`/`0x`
    need a digit, `1e` an exponent; Lean fails there, mid-token."""
    dec = "0123456789"
    if text[i] == "0" and text[i + 1 : i + 2] in tuple("bBoOxX"):
        digits = {"b": "01", "o": "01234567", "x": _HEX}[text[i + 1].lower()]
        return _digits_end(text, i + 2, digits, True)
    j = _digits_end(text, i + 1, dec, False)
    if text[j : j + 1] == ".":
        j += 1
        if text[j : j + 1] in tuple(dec):
            j = _digits_end(text, j, dec, False)
    if text[j : j + 1] in ("e", "E"):
        j += 1 + (text[j + 1 : j + 2] in ("+", "-"))
        if not text[j : j + 1] or text[j] not in dec:
            raise _LexError("a number missing its exponent digits (Lean stops reading there)")
        j = _digits_end(text, j, dec, False)
    return j


def _field_index_end(text: str, i: int) -> int:
    """`h.1`: after a `.` with no space, digits only (src/Lean/Parser/Term.lean `fieldIdx`)."""
    j = i
    while j < len(text) and text[j] in "0123456789":
        j += 1
    return j


def _raw_string_end(text: str, i: int) -> int:
    hashes = len(_RAW_START.match(text, i).group()) - 2  # `rawStrLitFnAux`: r, the #s, then "
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
