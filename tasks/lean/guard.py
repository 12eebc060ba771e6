"""What may be sent to Lean, and when a checked proof counts as proved.

Generated tactics and proofs are untrusted code: Lean runs `#eval`, `run_cmd`,
`elab`, `initialize`, IO actions and more while it elaborates. `forbidden_construct`
keeps such text from ever reaching a backend; `judge` decides "proved" from a
backend's `ProofCheck` (the axiom guard). Both are pure functions of text, so the
search, the proving evaluation and the GRPO rewards share one verdict.
See docs/lean-backends.md ("Containment", "The axiom guard").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .backend import ProofCheck

DEFAULT_ALLOWED_AXIOMS: tuple[str, ...] = ("propext", "Classical.choice", "Quot.sound")
"""The axioms of Lean's core logic; `sorryAx` and `Lean.ofReduceBool` (native_decide) are outside."""

# A token is a Lean identifier (dotted names, primes, `!`/`?` suffixes) or a `#command`.
_TOKEN = re.compile(
    r"#?[A-Za-z_\u00c0-\u024f\u0370-\u03ff][A-Za-z0-9_'!?\u00c0-\u024f\u0370-\u03ff]*"
    r"(?:\.[A-Za-z_][A-Za-z0-9_'!?]*)*"
)

# Words that begin a new command (the text would leave the theorem's tactic block) or
# run code at elaboration time. Matched as whole tokens, so `List.length_append` or
# `inferInstance` never match.
_COMMANDS = {
    "theorem",
    "lemma",
    "def",
    "example",
    "axiom",
    "axioms",
    "abbrev",
    "instance",
    "structure",
    "class",
    "inductive",
    "coinductive",
    "opaque",
    "namespace",
    "section",
    "end",
    "import",
    "universe",
    "variable",
    "export",
    "attribute",
    "mutual",
    "deriving",
    "noncomputable",
    "private",
    "protected",
    "partial",
    "unsafe",
    "set_option",
    "notation",
    "infix",
    "infixl",
    "infixr",
    "prefix",
    "postfix",
    "syntax",
    "declare_syntax_cat",
    "macro",
    "macro_rules",
    "elab",
    "elab_rules",
    "initialize",
    "builtin_initialize",
    "run_cmd",
    "run_elab",
    "run_meta",
    "run_tac",
    "by_elab",
    "implemented_by",
    "extern",
    "omit",
    "include",
    "register_simp_attr",
    "declare_config_elab",
    "add_decl_doc",
}
_CODE_PREFIXES = (
    "IO",
    "EIO",
    "BaseIO",
    "System",
    "unsafe",
    "Lean.Elab",
    "Lean.Meta",
    "Lean.Environment",
    "Lean.addDecl",
    "Lean.Compiler",
    "dbg_trace",
    "dbgTrace",
    "panic",
)


def forbidden_construct(text: str) -> str | None:
    """Why `text` (a tactic or a whole tactic proof) must never reach Lean, or None."""
    if "\x00" in text:
        return "it contains a NUL character"
    stripped = _strip_line_comments(text)
    if stripped.count("/-") != stripped.count("-/"):
        return "an unterminated block comment `/-` (it would swallow the commands after the proof)"
    if _unbalanced_quotes(stripped):
        return "an unterminated string literal (it would swallow the commands after the proof)"
    if "@[" in stripped:
        return "an attribute `@[...]`, which only commands take"
    for tok in _TOKEN.findall(stripped):
        if tok.startswith("#"):
            return f"the command `{tok}`: commands such as #eval and #print run code or leave the proof"
        if tok in _COMMANDS:
            return f"`{tok}`, which starts a new command or runs code while Lean elaborates"
        if any(tok == p or tok.startswith(p + ".") or (p[0].islower() and tok.startswith(p)) for p in _CODE_PREFIXES):
            return f"`{tok}`, which runs code (IO, the compiler or the elaborator) while Lean elaborates"
    return None


def _strip_line_comments(text: str) -> str:
    return "\n".join(line.split("--", 1)[0] for line in text.splitlines())


def _unbalanced_quotes(text: str) -> bool:
    unescaped = re.sub(r"\\.", "", text)
    # Char literals such as '"' are rare in proofs; a lone quote in one is counted as unbalanced.
    return unescaped.count('"') % 2 == 1


_SORRY_TOKENS = {"sorry", "admit", "sorryAx"}
_NATIVE_TOKENS = {"native_decide", "Lean.ofReduceBool", "ofReduceBool", "Lean.reduceBool"}
_SORRY_WARNINGS = (
    "declaration uses `sorry`",
    "declaration uses 'sorry'",
    "proof contains `sorry`",
    "proof contains 'sorry'",
)


@dataclass(frozen=True)
class Verdict:
    proved: bool
    reason: str


def judge(check: ProofCheck, proof: str, allowed_axioms=DEFAULT_ALLOWED_AXIOMS) -> Verdict:
    """Proved only if the checker accepted `proof`, it holds no `sorry`/`admit`, no
    forbidden construct, no `native_decide`, Lean did not warn that it uses `sorry`,
    and every axiom it depends on is in `allowed_axioms`."""
    if check.error is not None:
        return Verdict(False, f"not checked ({check.checker} failed: {check.error})")
    if not check.accepted:
        first = next(iter(check.messages), "")
        return Verdict(False, f"rejected by {check.checker}" + (f": {first}" if first else ""))
    why = forbidden_construct(proof)
    if why is not None:
        return Verdict(False, f"forbidden construct: {why}")
    tokens = set(_TOKEN.findall(_strip_line_comments(proof)))
    if tokens & _SORRY_TOKENS:
        return Verdict(False, f"the proof uses `{sorted(tokens & _SORRY_TOKENS)[0]}`")
    for m in check.messages:
        if any(w in m for w in _SORRY_WARNINGS):
            return Verdict(False, f"{check.checker} reports: {m}")
    if tokens & _NATIVE_TOKENS:
        return Verdict(False, "the proof uses native_decide (axiom Lean.ofReduceBool), which trusts the compiler")
    outside = [a for a in check.axioms if a not in set(allowed_axioms)]
    if outside:
        return Verdict(False, f"depends on axioms outside the allow-list: {', '.join(outside)}")
    return Verdict(
        True, f"accepted by {check.checker}" + (f"; axioms: {', '.join(check.axioms)}" if check.axioms else "")
    )


# Names may end in primes (`'add_zero''`), so the name is everything up to the last `' `.
AXIOMS_NONE = re.compile(r"^'(?P<name>.+)' does not depend on any axioms\s*$", re.S)
AXIOMS_SOME = re.compile(r"^'(?P<name>.+)' depends on axioms: \[(?P<axioms>[^\]]*)\]\s*$", re.S)


def parse_print_axioms(message: str) -> tuple[str, tuple[str, ...]] | None:
    """(theorem name, axioms) from the info message of `#print axioms T`, or None if it is not one."""
    text = message.strip()
    m = AXIOMS_NONE.match(text)
    if m:
        return m["name"], ()
    m = AXIOMS_SOME.match(text)
    if m:
        return m["name"], tuple(a.strip() for a in m["axioms"].replace("\n", " ").split(",") if a.strip())
    return None
