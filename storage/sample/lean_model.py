"""One description of a small Lean 4 repository, from which both its `.lean` sources
and its LeanDojo trace are produced, so the two always agree.

A repository is a list of `LeanFile`s; a file holds declarations (`Decl`: defs,
inductives, instances, ...) and theorems (`Theorem`). A theorem's proof is either a
term (no traced tactics, as LeanDojo records term-mode proofs) or a list of tactic
steps. A `Step` is one tactic and the goal state it leaves; a `Block` is a structured
tactic with alternatives (`induction n with | zero => ... | succ n ih => ...`), traced
as LeanDojo does: the whole block first (its text spans all its lines), then the
tactics of each alternative, pre-order. State strings are written out by hand in the
content modules (`storage/sample/content/`); the state before a theorem's first
tactic is derived from its binders and statement.

`render_repo` returns the source text of each file and, for every declaration, its
position; `trace_theorem` returns the traced tactics with their annotations. Premise
mentions are found by name in the tactic text and resolved against the premises the
theorem can see (its own file above it, and the files it imports, transitively), or
against the declared Lean core premises. An unknown qualified name is an error, so a
typo in the content fails the generator instead of shipping a wrong annotation.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from storage.tactic_text import NO_GOALS

MAX_LINE = 100  # longer one-line proofs are broken after `:=`


# -- the description --------------------------------------------------------------------
@dataclass(frozen=True)
class Step:
    """One tactic (a single line) and the goal state after it."""

    tactic: str
    after: str = NO_GOALS


@dataclass(frozen=True)
class Alt:
    """One alternative of a structured tactic: `| pattern => steps`."""

    pattern: str
    before: str
    steps: tuple


@dataclass(frozen=True)
class Block:
    """A structured tactic (`induction x with`, `cases x with`) and its alternatives."""

    header: str
    alts: tuple
    after: str = NO_GOALS


@dataclass(frozen=True)
class Theorem:
    """A theorem; exactly one of `steps` (tactic proof) and `term` (term-mode proof)."""

    name: str
    binders: str
    stmt: str
    steps: tuple | None = None
    term: str | None = None
    attrs: str = ""
    goal: str | None = None  # the statement as Lean prints it, where it differs from `stmt`

    @property
    def header(self) -> str:
        """`theorem name binders : stmt`, the text LeanDojo gives as theorem_statement."""
        binders = f" {self.binders}" if self.binders else ""
        return f"theorem {self.name}{binders} : {self.stmt}"

    @property
    def has_sorry(self) -> bool:
        return any(t == "sorry" for t in _all_tactic_texts(self.steps or ()))


@dataclass(frozen=True)
class Decl:
    """A premise that is not a theorem: def, abbrev, inductive, structure, instance."""

    kind: str
    name: str  # relative to the file's namespace, e.g. `Role.says`
    text: str  # the full Lean text, doc comment included
    constructors: tuple[str, ...] = ()  # names relative to `name`; mentioned but not annotated


@dataclass(frozen=True)
class Comment:
    """A section comment between declarations; not a premise."""

    text: str


@dataclass(frozen=True)
class LeanFile:
    module: str  # `NatBasics.Add`
    imports: tuple[str, ...]  # modules of the same repository
    doc: str  # module doc comment body; empty for a root file of imports only
    namespace: str | None
    items: tuple

    @property
    def path(self) -> str:
        return self.module.replace(".", "/") + ".lean"


@dataclass(frozen=True)
class LeanRepo:
    name: str
    description: str
    files: tuple[LeanFile, ...]  # dependency order; the root file (imports only) last


@dataclass(frozen=True)
class CorePremise:
    """A Lean core declaration that tactics mention; LeanDojo annotates it with its
    path inside the toolchain, and it is not part of the repository's corpus."""

    def_path: str
    def_pos: tuple[int, int]
    def_end_pos: tuple[int, int]


# -- constructors used by the content modules ------------------------------------------
def S(tactic: str, after: str = NO_GOALS) -> Step:
    return Step(tactic, after)


def alt(pattern: str, before: str, *steps) -> Alt:
    return Alt(pattern, before, tuple(steps))


def block(header: str, *alts: Alt, after: str = NO_GOALS) -> Block:
    return Block(header, tuple(alts), after)


def thm(name: str, binders: str, stmt: str, *steps, attrs: str = "", goal: str | None = None) -> Theorem:
    return Theorem(name, binders, stmt, steps=tuple(steps), attrs=attrs, goal=goal)


def term(name: str, binders: str, stmt: str, proof: str, attrs: str = "") -> Theorem:
    return Theorem(name, binders, stmt, term=proof, attrs=attrs)


def g(ctx: str, target: str, case: str | None = None) -> str:
    """One goal as Lean prints it: `case tag`, the hypotheses, `⊢ target`."""
    lines = [f"case {case}"] if case else []
    if ctx:
        lines.append(ctx)
    lines.append(f"⊢ {target}")
    return "\n".join(lines)


def gs(*goals: str) -> str:
    """Several goals, separated by a blank line as Lean prints them."""
    return "\n\n".join(goals)


# -- binders to hypotheses -----------------------------------------------------------------
_OPEN = {"(": ")", "{": "}", "[": "]", "⦃": "⦄"}


def _binder_groups(binders: str) -> list[tuple[str, str]]:
    """`(n m : Nat) {α : Type} [Inhabited α]` -> [("n m", "Nat"), ("α", "Type"), ("inst✝", "Inhabited α")]."""
    groups, i = [], 0
    while i < len(binders):
        c = binders[i]
        if c.isspace():
            i += 1
            continue
        if c not in _OPEN:
            raise ValueError(f"binders {binders!r}: unexpected {c!r} at {i}")
        depth, j = 0, i
        while True:
            if binders[j] in _OPEN:
                depth += 1
            elif binders[j] in _OPEN.values():
                depth -= 1
                if depth == 0:
                    break
            j += 1
        inner = binders[i + 1 : j]
        if c == "[":
            named = re.match(r"^([\w']+) : (.*)$", inner)
            groups.append((named.group(1), named.group(2)) if named else ("inst✝", inner.strip()))
        else:
            names, sep, typ = inner.partition(" : ")
            if not sep:
                raise ValueError(f"binder {inner!r} has no type")
            groups.append((names.strip(), typ.strip()))
        i = j + 1
    return groups


def hypotheses(binders: str) -> list[str]:
    """Hypothesis lines as Lean shows them: consecutive names of one type share a line."""
    merged: list[list] = []
    for names, typ in _binder_groups(binders):
        if merged and merged[-1][1] == typ:
            merged[-1][0].extend(names.split())
        else:
            merged.append([names.split(), typ])
    return [f"{' '.join(names)} : {typ}" for names, typ in merged]


def initial_state(t: Theorem) -> str:
    return g("\n".join(hypotheses(t.binders)), t.goal or t.stmt)


# -- rendering -------------------------------------------------------------------------------
def _render_steps(steps, indent: int) -> list[str]:
    lines = []
    for st in steps:
        if isinstance(st, Step):
            if "\n" in st.tactic:
                raise ValueError(f"a Step is one line: {st.tactic!r}")
            lines.append(" " * indent + st.tactic)
        else:
            lines.extend(_render_block(st, indent))
    return lines


def _render_block(b: Block, indent: int) -> list[str]:
    pad = " " * indent
    lines = [pad + b.header]
    for a in b.alts:
        only = a.steps[0] if len(a.steps) == 1 else None
        one_line = f"{pad}| {a.pattern} => {only.tactic}" if isinstance(only, Step) else None
        if one_line is not None and len(one_line) <= MAX_LINE:
            lines.append(one_line)
        else:
            lines.append(f"{pad}| {a.pattern} =>")
            lines.extend(_render_steps(a.steps, indent + 2))
    return lines


def render_theorem(t: Theorem) -> str:
    head = (t.attrs + " " if t.attrs else "") + t.header
    if (t.term is None) == (t.steps is None):
        raise ValueError(f"{t.name}: give exactly one of a term proof and tactic steps")
    if t.term is not None:
        one = f"{head} := {t.term}"
        return one if len(one) <= MAX_LINE else f"{head} :=\n  {t.term}"
    if not t.steps:
        raise ValueError(f"{t.name}: a tactic proof needs at least one step")
    if len(t.steps) == 1 and isinstance(t.steps[0], Step):
        one = f"{head} := by {t.steps[0].tactic}"
        if len(one) <= MAX_LINE:
            return one
    return f"{head} := by\n" + "\n".join(_render_steps(t.steps, 2))


def render_decl(item) -> str:
    return render_theorem(item) if isinstance(item, Theorem) else item.text


@dataclass
class Placed:
    """A declaration at its place in a rendered file (positions 1-based, end exclusive)."""

    item: object
    full_name: str
    kind: str
    code: str
    start: tuple[int, int]
    end: tuple[int, int]
    file: LeanFile


@dataclass
class RenderedFile:
    file: LeanFile
    text: str
    placed: list[Placed] = field(default_factory=list)


def render_file(f: LeanFile) -> RenderedFile:
    """The file's text; each declaration's start/end as LeanDojo gives them."""
    lines: list[str] = [f"import {m}" for m in f.imports]
    out = RenderedFile(f, "")
    if f.doc:
        if lines:
            lines.append("")
        lines.extend(f"/-!\n{f.doc.strip()}\n-/".split("\n"))
    if f.namespace:
        lines += ["", f"namespace {f.namespace}"]
    for item in f.items:
        lines.append("")
        text = render_decl(item)
        first = len(lines) + 1
        body = text.split("\n")
        lines.extend(body)
        if isinstance(item, Comment):
            continue
        prefix = f"{f.namespace}." if f.namespace else ""
        kind = "theorem" if isinstance(item, Theorem) else item.kind
        out.placed.append(
            Placed(item, prefix + item.name, kind, text, (first, 1), (first + len(body) - 1, len(body[-1]) + 1), f)
        )
    if f.namespace:
        lines += ["", f"end {f.namespace}"]
    out.text = "\n".join(lines) + "\n"
    return out


def render_lakefile(repo: LeanRepo) -> str:
    return (
        "import Lake\nopen Lake DSL\n\n"
        f"-- {repo.description}\n"
        "-- Dojoflow sample data, written by storage/sample/generate.py: Lean 4 core only.\n"
        f"package «{repo.name}» where\n"
        "  -- no dependencies\n\n"
        "@[default_target]\n"
        f"lean_lib «{repo.name}» where\n"
        f"  -- the root module `{repo.name}` imports every file\n"
    )


# -- tracing -----------------------------------------------------------------------------------
_IDENT = re.compile(r"(?<![\w.'!?✝])([A-Za-z_][\w'!?]*(?:\.[A-Za-z_][\w'!?]*)*)")


@dataclass
class Scope:
    """What a theorem can mention: visible repository premises and Lean core premises."""

    namespace: str | None
    visible: dict[str, Placed]  # full name -> premise
    all_premises: dict[str, Placed]
    constructors: set[str]
    core: dict[str, CorePremise]

    def resolve(self, token: str, where: str):
        candidates = ([f"{self.namespace}.{token}"] if self.namespace else []) + [token]
        for name in candidates:
            if name in self.constructors:
                return None
            if name in self.visible:
                return name, self.visible[name]
            if name in self.all_premises:
                raise ValueError(f"{where}: {token} is defined after the theorem or in a file it does not import")
        if token in self.core:
            return token, self.core[token]
        if "." in token and token[0].isupper():
            raise ValueError(f"{where}: unknown constant {token}: add it to CORE_PREMISES or fix the name")
        return None


def annotate(tactic: str, scope: Scope, where: str) -> tuple[str, list[dict]]:
    """LeanDojo's annotated tactic: `<a>name</a>` around premise mentions, and their definitions."""
    parts, annotations, last = [], [], 0
    for m in _IDENT.finditer(tactic):
        hit = scope.resolve(m.group(1), where)
        if hit is None:
            continue
        name, prem = hit
        parts += [tactic[last : m.start()], f"<a>{m.group(1)}</a>"]
        last = m.end()
        if isinstance(prem, Placed):
            annotations.append(
                {
                    "full_name": name,
                    "def_path": prem.file.path,
                    "def_pos": list(prem.start),
                    "def_end_pos": list(prem.end),
                }
            )
        else:
            annotations.append(
                {
                    "full_name": name,
                    "def_path": prem.def_path,
                    "def_pos": list(prem.def_pos),
                    "def_end_pos": list(prem.def_end_pos),
                }
            )
    parts.append(tactic[last:])
    return "".join(parts), annotations


def _all_tactic_texts(steps) -> list[str]:
    out = []
    for st in steps:
        if isinstance(st, Step):
            out.append(st.tactic)
        else:
            for a in st.alts:
                out += _all_tactic_texts(a.steps)
    return out


def _trace(steps, before: str, indent: int, where: str, out: list) -> str:
    state = before
    for i, st in enumerate(steps):
        if isinstance(st, Step):
            out.append((st.tactic, state, st.after))
        else:
            text = "\n".join(_render_block(st, indent))[indent:]
            out.append((text, state, st.after))
            for a in st.alts:
                end = _trace(a.steps, a.before, indent + 2, f"{where} | {a.pattern}", out)
                if end != NO_GOALS:
                    raise ValueError(f"{where} | {a.pattern}: the alternative leaves goals: {end!r}")
        state = st.after
        if state == NO_GOALS and i != len(steps) - 1:
            raise ValueError(f"{where}: step {i} closes every goal but more steps follow")
    return state


def trace_theorem(t: Theorem, scope: Scope, where: str) -> list[dict]:
    """LeanDojo's traced_tactics of one theorem ([] for a term-mode proof)."""
    if t.steps is None:
        return []
    raw: list[tuple[str, str, str]] = []
    end = _trace(t.steps, initial_state(t), 2, where, raw)
    if end != NO_GOALS:
        raise ValueError(f"{where}: the proof ends with goals left: {end!r}")
    seen, out = set(), []
    for text, before, after in raw:
        if (before, text, after) in seen:
            raise ValueError(f"{where}: tactic {text!r} is traced twice with the same states")
        seen.add((before, text, after))
        annotated, annotations = annotate(text, scope, where)
        out.append(
            {"tactic": text, "annotated_tactic": [annotated, annotations], "state_before": before, "state_after": after}
        )
    return out
