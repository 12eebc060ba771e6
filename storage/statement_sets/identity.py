"""What a statement of a statement set is: its id, its split, its parts, what its header may import,
and which toolchain may check it (docs/statement-sets.md).

- `statement_id`: the contamination gate's fingerprint of the statement (storage/contamination.py,
  the one rule: comments, keyword, name, bound names and layout do not count) hashed with the
  normalised header (comments dropped, whitespace collapsed, one line per command, sorted and
  deduplicated; resource limits such as `set_option maxHeartbeats N` dropped, and imports that
  `import Mathlib` already brings): the same statement under the same header is one theorem,
  whichever set, name or layout it came with. `fingerprint` alone is what the contamination gate compares.
- `split_statement`: a declaration's text cut at its top-level `:=` (Lean's lexer rules,
  storage/lean_lexer.py): the statement up to and with `:=`, and the body after it. A
  DeepSeek-style `formal_statement` ends `:= by` and a newline: the `by` is the format, not a body.
- `split_of`: a statement without a split of its own gets one from its id, as repositories' theorems
  get one from theirs (storage/splits.py): fixed at ingestion, independent of the other statements.

>>> statement_id("theorem a (x : Nat) : x = x :=", "import Mathlib") == statement_id("lemma b (y : Nat) :\\n y = y :=", "import  Mathlib\\n")
True
>>> split_statement("theorem t : 1 = 1 := by\\n")
('theorem t : 1 = 1 :=', '')
>>> split_statement("theorem t : 1 = 1 := by norm_num")[1]
'by norm_num'
"""

from __future__ import annotations

import functools
import re
from hashlib import sha256

from ..contamination import fingerprint
from ..ids import unit_interval
from ..lean_lexer import lex
from ..splits import SplitSettings

_LINE_COMMENT = re.compile(r"--[^\n]*")
_BLOCK_COMMENT = re.compile(r"/-.*?-/", re.S)
_TAIL = re.compile(r":=\s*(?:by\s*)?$")
_FAST_TAIL = re.compile(r":=\s*(?:by\s*)?((?:by\s+)?sorry)?\s*$")
_SORRY_TAIL = re.compile(r":=\s*(?:by\s+)?sorry\s*$")
_DECL_WORDS = frozenset({"theorem", "lemma", "example", "def", "abbrev", "instance"})
_OPEN = frozenset({"(", "[", "{", "⦃", "⟨", "@["})
_CLOSE = frozenset({")", "]", "}", "⦄", "⟩"})

SPLIT_NAMES = {"train": "train", "val": "val", "valid": "val", "validation": "val", "dev": "val", "test": "test"}

# Roots of the modules a Lean 4 toolchain with Mathlib provides (core Lean, and Mathlib's own
# dependencies as its lake-manifest.json lists them). A header importing anything else names a
# module the checking project cannot have, unless the set's config lists its root.
LEAN4_ROOTS = frozenset({"Init", "Lean", "Std", "Lake"})
MATHLIB_ROOTS = frozenset(
    {"Mathlib", "Batteries", "Aesop", "Qq", "ProofWidgets", "Plausible", "ImportGraph", "LeanSearchClient"}
)


_DECL_START = re.compile(
    r"(?m)^[ \t]*(?:@\[[^\]\n]*\][ \t\n]*)*(?:(?:private|protected|noncomputable|nonrec)[ \t]+)*(?:theorem|lemma|example)\b"
)


def declaration_start(text: str) -> int | None:
    """Where the first theorem/lemma/example declaration of `text` starts (a line's start), or None."""
    m = _DECL_START.search(text)
    return m.start() if m else None


def separate_header(text: str) -> tuple[str, str]:
    """(what comes before the declaration: imports, `open`, a docstring, a `_solution` abbrev;
    the declaration from its keyword on). No declaration: ("", text)."""
    at = declaration_start(text)
    if not at:
        return "", text
    return text[:at], text[at:]


# Resource limits, not meaning: copies of a benchmark differ in them (DeepSeek-Prover-V1.5's miniF2F
# header sets maxHeartbeats 0; a limit of 400000 is as common), and they are one statement.
_RESOURCE_OPTION = re.compile(r"^set_option (?:maxHeartbeats|maxRecDepth|synthInstance\.maxHeartbeats) \d+$")
_SUBSUMED_IMPORT = re.compile(
    r"^import (?:(?:Mathlib|Batteries|Aesop|Qq|ProofWidgets|Plausible|ImportGraph|LeanSearchClient)(?:\.\S+)?)$"
)


@functools.lru_cache(maxsize=1024)  # a set's rows share a few headers
def normalise_header(header: str | None) -> str:
    """The header without comments, each command on one line of single spaces, sorted, once each."""
    if not header:
        return ""
    text = _LINE_COMMENT.sub(" ", _BLOCK_COMMENT.sub(" ", header))
    lines = {" ".join(line.split()) for line in text.splitlines()}
    lines = {line for line in lines if line and not _RESOURCE_OPTION.match(line)}
    if (
        "import Mathlib" in lines
    ):  # `import Mathlib` brings Aesop, Batteries, Mathlib.X ...: saying them changes nothing
        lines = {line for line in lines if not _SUBSUMED_IMPORT.match(line)} | {"import Mathlib"}
    return "\n".join(sorted(lines))


def statement_id(statement: str, header: str | None = None, fp: str | None = None) -> str:
    """The id of a statement under a header: one theorem whichever set brought it."""
    fp = fingerprint(statement) if fp is None else fp
    return sha256(f"{fp}\x1f{normalise_header(header)}".encode()).hexdigest()[:16]


def ends_with_assign(statement: str) -> bool:
    """Whether a statement ends in `:=` (optionally `:= by`), the shape a prover completes."""
    return _TAIL.search(statement) is not None


def statement_without_tail(statement: str) -> str:
    """`theorem t : P := by\\n` -> `theorem t : P :=` (the canonical stored form)."""
    text = statement.rstrip()
    m = _TAIL.search(text)
    return text[: m.start()].rstrip() + " :=" if m else text


def split_statement(text: str) -> tuple[str, str] | None:
    """(declaration through its top-level `:=`, the body after it) of a declaration, or None when it
    has no top-level `:=`. Text before the declaration keyword (imports, `open`, a docstring) stays
    in the first part. A body that is only `by` (the DeepSeek format) is empty."""
    m = _FAST_TAIL.search(text)
    if m and text.count(":=") == 1 and "--" not in text and "/-" not in text and '"' not in text:
        return text[: m.start()].rstrip() + " :=", m.group(1) or ""  # the common case, without lexing
    lexed = lex(text)
    if lexed.error:
        return None
    depth, seen_decl = 0, False
    for tok in lexed.tokens:
        if tok.kind == "ident" and tok.text in _DECL_WORDS:
            seen_decl = True
        if tok.text in _OPEN:
            depth += 1
        elif tok.text in _CLOSE:
            depth -= 1
        elif tok.text == ":=" and depth == 0 and seen_decl:
            body = text[tok.end :].strip()
            return text[: tok.start].rstrip() + " :=", "" if body == "by" else body
    return None


def is_sorry_body(body: str) -> bool:
    return _SORRY_TAIL.search(":= " + body) is not None


def split_of(sid: str, settings: SplitSettings) -> str:
    """train/val/test from a statement's id (its fingerprint and header), as storage/splits.py does."""
    u = unit_interval(settings.salt, "statement", sid)
    if u < settings.val_fraction:
        return "val"
    return "test" if u < settings.val_fraction + settings.test_fraction else "train"


_IMPORT = re.compile(r"^\s*import\s+(.+)$", re.M)


def imports_of(header: str | None) -> list[str]:
    if not header:
        return []
    text = _BLOCK_COMMENT.sub(" ", header)
    return [m for line in _IMPORT.findall(text) for m in _LINE_COMMENT.sub("", line).split()]


@functools.lru_cache(maxsize=1024)
def import_problem(header: str | None, extra_roots: frozenset[str] | tuple = ()) -> str | None:
    """A reason when the header imports a module no Lean 4 toolchain with Mathlib has, else None."""
    allowed = LEAN4_ROOTS | MATHLIB_ROOTS | frozenset(extra_roots)
    for module in imports_of(header):
        root = module.split(".")[0]
        if root in allowed:
            continue
        if root[:1].islower():
            return f"imports `{module}`, a Lean 3 module (Lean 4 modules are capitalised, e.g. `Mathlib`)"
        return f"imports `{module}`, which neither Lean 4 nor Mathlib provides"
    return None


def lean_version_key(version: str | None) -> tuple[int, ...] | None:
    """`leanprover/lean4:v4.15.0` / `v4.15.0` / `4.15` -> (4, 15, 0) / (4, 15); None if unknown."""
    if not version:
        return None
    m = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", version)
    if not m:
        return None
    return tuple(int(g) for g in m.groups() if g is not None)


def same_lean(written_for: str | None, checked_with: str | None) -> bool:
    """Whether a set written for `written_for` may be checked with `checked_with`: unknown on
    either side is allowed; `4.15` matches every `4.15.x`; an rc suffix is part of the version."""
    a, b = lean_version_key(written_for), lean_version_key(checked_with)
    if a is None or b is None:
        return True
    n = min(len(a), len(b))
    if a[:n] != b[:n]:
        return False
    rc = lambda v: (re.search(r"-rc\d+", v or "") or [None])[0]  # noqa: E731
    ra, rb = rc(written_for), rc(checked_with)
    return ra is None or rb is None or ra == rb
