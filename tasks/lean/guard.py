"""What may be sent to Lean: the text pre-filter, and the reading of `#print axioms`.

Generated tactics and proofs are untrusted code: Lean runs `#eval`, `run_cmd`,
`elab`, `initialize`, IO actions and native code while it elaborates.
`forbidden_construct` keeps such text from ever reaching a backend. It is a cheap first
line, not what makes a verdict sound: "proved" is decided from Lean's own answers by
`tasks.lean.verdict.judge` (docs/lean-backends.md, "The verdict rule").
"""

from __future__ import annotations

import re

from storage.lean_text import (
    DEFAULT_ALLOWED_AXIOMS,  # noqa: F401 (the one definition; verdict and config read it here)
    LeanTextError,
    canonical_proof,
    is_command,
    lex,
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


_NATIVE_NAMES = {
    "native_decide",
    *(f"{ns}{n}" for ns in ("Lean.", "") for n in ("ofReduceBool", "ofReduceNat", "reduceBool", "reduceNat")),
    "Lean.trustCompiler",
    "trustCompiler",  # after `open Lean`
}
"""Names that make Lean compile and run code while checking, trusting the compiler (the axioms
`Lean.ofReduceBool`/`Lean.trustCompiler`): code runs on the host, and the proof is not the kernel's."""

_RUNS_CODE = {
    # Std.Tactic.BVDecide: runs the CaDiCaL SAT solver as a process, and checks its certificate
    # with `Lean.ofReduceBool` (native code)
    "bv_decide": "runs an external SAT solver (cadical) and checks its answer with native code",
    # bv_check "FILE": reads an LRAT certificate from a file, checked with `Lean.ofReduceBool`
    "bv_check": "reads a file from the host and checks it with native code",
    # Mathlib.Tactic.Polyrith: sends the goal to SageMathCell over the network
    "polyrith": "sends the goal over the network (SageMathCell)",
    # Plausible (formerly slim_check): compiles and evaluates the statement on random inputs
    "plausible": "compiles and runs code to test the statement",
    "slim_check": "compiles and runs code to test the statement",
}
"""Tactics that run code, start processes, read files or reach the network while Lean
elaborates them (their trailing `?`/`!` variants too)."""


KERNEL_DECIDE_ALLOWED = False
"""The switch for `decide +kernel` / `decide (kernel := true)` / `decide!`: refused while False.
Such a `decide` adds its auxiliary lemma through `mkAuxLemma` without the elaborator's check, and
the lemma cache hands that lemma back by type to later proofs (lean4 src/Lean/Meta/Tactic/AuxLemma.lean;
src/Lean/Elab/Tactic/ElabTerm.lean `decide` with `kernel := true`); `#print axioms` lists nothing
for it. Only a replay of the exported declarations into a fresh kernel (the gold check,
docs/lean-backends.md) judges such a proof: set this True only where every accepted proof is
gold-checked before it counts."""

_KERNEL_OPTIONS = {
    "skipKernelTC": "`debug.skipKernelTC` makes `addDecl` skip the kernel's type check (lean4 src/Lean/AddDecl.lean)",
    "maxHeartbeats": "`maxHeartbeats` changes how long Lean may work on the proof (0: without limit)",
}
"""Options (their last name component) that change what or how long Lean checks; `set_option`
itself is refused in every position (a command, `set_option ... in` as a tactic or a term:
lean4 src/Lean/Elab/BuiltinNotation.lean, src/Lean/Elab/Tactic/BuiltinTactic.lean `elabSetOption`)."""


def forbidden_construct(text: str) -> str | None:
    """Why `text` (a tactic or a whole tactic proof) must never reach Lean, or None.

    Read as Lean lexes it (storage/lean_text.py): comments are skipped, strings, char literals
    and «» identifiers are single tokens, `_root_.X` and `«X»` are `X`. A cheap first line only:
    whether a proof counts is decided from Lean's answers (tasks/lean/verdict.py)."""
    try:
        canonical_proof(text)
    except LeanTextError as e:
        return str(e)
    lexed = lex(text)
    if lexed.error is not None:
        return lexed.error
    toks = lexed.tokens
    for k, tok in enumerate(toks):
        if is_command(tok):
            return f"the command `{tok.text}`: commands such as #eval and #print run code or leave the proof"
        if tok.text == "@[":
            return "an attribute `@[...]`, which only commands take"
        if tok.kind != "ident":
            continue
        name = tok.name
        if name in _COMMANDS:
            return f"`{tok.text}`, which starts a new command or runs code while Lean elaborates"
        if any(
            name == p or name.startswith(p + ".") or (p[0].islower() and name.startswith(p)) for p in _CODE_PREFIXES
        ):
            return f"`{tok.text}`, which runs code (IO, the compiler or the elaborator) while Lean elaborates"
        option = _KERNEL_OPTIONS.get(name.rsplit(".", 1)[-1])
        if option is not None or name.startswith("debug."):
            return f"`{tok.text}`: {option or 'a debug option'}; options that change what the kernel checks are refused"
        if not KERNEL_DECIDE_ALLOWED and (name == "decide!" or _option_set(toks, k, "kernel")):
            return (
                f"`{tok.text}`: `decide` with `kernel` adds its lemma without the elaborator's check and the "
                "aux-lemma cache reuses it by type; refused until the gold check replays every proof"
            )
        if name in _NATIVE_NAMES or _option_set(toks, k, "native"):
            return f"`{tok.text}`: native evaluation compiles and runs code and trusts the compiler (Lean.ofReduceBool)"
        runs = _RUNS_CODE.get(name.rstrip("?!"))
        if runs is not None:
            return f"`{tok.text}`, which {runs}"
        if _positional_config(toks, k):
            return (
                f"a configuration given positionally (`{toks[k + 2].text} ...`), which can turn on `native` "
                "unseen: write `(config := { field := value })`"
            )
    return None


def _positional_config(toks, k: int) -> bool:
    """`(config := ⟨false, true, ...⟩)`, `(config := .mk false true ...)`, `(config := someCfg)`:
    a tactic configuration not written as `{ field := value }`, whose fields (`decide`'s
    `native` is its second) the guard cannot read by name."""
    if toks[k].name != "config" or k + 2 >= len(toks) or toks[k + 1].text != ":=":
        return False
    return toks[k + 2].text not in ("{", "{}")


def _option_set(toks, k: int, option: str) -> bool:
    """`decide +native`, `decide -kernel`, `(config := { native := true })`, `(kernel := true)`:
    the tactic option `option` given a value (any value: the guard reads no values)."""
    if toks[k].name != option:
        return False
    before = toks[k - 1].text if k > 0 else ""
    after = toks[k + 1].text if k + 1 < len(toks) else ""
    return before in ("+", "-") or after == ":="


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


def __getattr__(name: str):
    # `judge` moved to tasks/lean/verdict.py (one rule, one function); old imports still find it.
    if name in ("judge", "Verdict"):
        from . import verdict

        return getattr(verdict, name)
    raise AttributeError(name)
