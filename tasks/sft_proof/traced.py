"""Whole proofs of traced theorems: the proof text of each train theorem, read back from its source.

LeanDojo records each theorem's span in its file (`start`, `end`: 1-based [line, column], the end
exclusive; lean-dojo's `Pos` is 1-based "to keep it consistent with code editors", and
`LeanFile.__getitem__(start, end)` slices the code up to `end` without it). The declaration is the
text of that span; its proof is what follows the declaration's top-level `:=` (the first `:=` token
outside brackets, read with Lean's lexer, storage/lean_lexer.py). A proof `:= by TACTICS` gives
TACTICS, dedented; a term proof (`:= rfl`, `:= fun ...`) gives `exact TERM` when the term is one
line, and is skipped otherwise (counted). The file is the repository's checkout (`projects`) or,
for the sample, its own sources (tasks/lean/source.py:project_dir).

Where no source can be read, the traced tactics stand in: the top-level chain (each tactic starting
from the state the previous one left, as LeanDojo records nested tactics as steps of their own),
joined one per line, when it ends with no goals. `origin` says which: `traced_source` or
`traced_tactics`. Theorems with `sorry` are never taken.

    python -c "help('tasks.sft_proof.traced')"
"""

from __future__ import annotations

import textwrap
from collections import defaultdict

from storage.errors import InputError
from storage.lean_lexer import lex
from storage.tactic_text import NO_GOALS, is_sorry

_OPEN, _CLOSE = frozenset("([{⦃⟨"), frozenset(")]}⦄⟩")


def span_text(text: str, start, end) -> str | None:
    """The text of a LeanDojo span (1-based [line, column], end exclusive), or None if out of range."""
    lines = text.splitlines(keepends=True)
    (l0, c0), (l1, c1) = start, end
    if not (1 <= l0 <= l1 <= len(lines)):
        return None
    if l0 == l1:
        return lines[l0 - 1][c0 - 1 : c1 - 1]
    return lines[l0 - 1][c0 - 1 :] + "".join(lines[l0 : l1 - 1]) + lines[l1 - 1][: c1 - 1]


def proof_of_declaration(decl: str) -> tuple[str | None, str]:
    """(the tactic block of a declaration's proof, why not): `:= by TACTICS` gives TACTICS
    dedented; a one-line term `:= t` gives `exact t`; anything else (None, the reason).

    >>> proof_of_declaration("theorem t (n : Nat) : n + 0 = n := by\\n  simp")
    ('simp', '')
    >>> proof_of_declaration("theorem t : 1 = 1 := rfl")
    ('exact rfl', '')
    """
    lexed = lex(decl)
    if lexed.error:
        return None, f"does not lex: {lexed.error}"
    depth, cut = 0, None
    for tok in lexed.tokens:
        if tok.text in _OPEN or tok.text == "@[":
            depth += 1
        elif tok.text in _CLOSE:
            depth -= 1
        elif tok.text == ":=" and depth == 0:
            cut = tok.end
            break
    if cut is None:
        return None, "no top-level `:=` (pattern-matching equations)"
    body = decl[cut:]
    stripped = body.lstrip()
    if stripped.startswith("by") and (len(stripped) == 2 or stripped[2] in " \t\n"):
        block = stripped[2:]
        first, _, rest = block.partition("\n")
        proof = (first.strip() + "\n" + textwrap.dedent(rest)).strip() if first.strip() else textwrap.dedent(rest)
        proof = proof.strip("\n").rstrip()
        return (proof, "") if proof.strip() else (None, "empty `by` block")
    term = stripped.strip()
    if term and "\n" not in term:
        return f"exact {term}", ""
    return None, "a term proof over several lines"


def tactic_block(text_after_assign: str) -> str:
    """A statement set's proof (the text after `:=`) as a tactic block: `by` dropped, or `exact TERM`
    (sft_proof trains on it; whole-proof expert iteration keeps it).

    >>> tactic_block("by\\n  simp")
    'simp'
    >>> tactic_block("rfl")
    'exact rfl'
    """
    proof, _ = proof_of_declaration("theorem _x : True := " + text_after_assign)
    return proof or ""


def _chain(steps: list[dict]) -> str | None:
    """The traced tactics' top-level chain joined one per line, if it closes every goal."""
    steps = sorted(steps, key=lambda s: s["idx"])
    if not steps or steps[0]["idx"] != 0:
        return None
    chain, state = [], steps[0]["state_before"]
    for s in steps:
        if s["state_before"] == state:
            chain.append(s["tactic"].strip())
            state = s["state_after"]
    return "\n".join(chain) if " ".join(state.split()) == NO_GOALS and chain else None


class _Sources:
    def __init__(self, projects: dict[str, str]):
        self.projects, self.texts = projects, {}

    def text(self, spec) -> str | None:
        from tasks.lean.source import project_dir

        key = (spec.repo_id, spec.file_path)
        if key not in self.texts:
            try:
                self.texts[key] = (project_dir(spec, self.projects, "projects") / spec.file_path).read_text("utf-8")
            except (InputError, OSError, UnicodeDecodeError):
                self.texts[key] = None
        return self.texts[key]


def traced_whole_proofs(store, snapshot, split_kind: str, projects: dict[str, str] | None = None) -> tuple[list, dict]:
    """([proof rows], counts) of the snapshot's train theorems: one row per theorem with a whole
    proof (see the module doc). A row: kind `repo`, key (theorem id), repo_id, theorem_id,
    full_name, header (empty: repositories' prompts carry the statement only), statement,
    informal (None), proof, origin."""
    from tasks.lean.theorems import load_theorems

    table = snapshot.theorems(split_kind, "train")
    cols = ["repo_id", "theorem_id", "file_path", "full_name", "start", "end", "has_sorry", "num_tactics"]
    rows = [r for r in table.select(cols).to_pylist() if not r["has_sorry"]]
    counts = {"theorems": len(rows), "traced_source": 0, "traced_tactics": 0, "skipped": 0}
    if not rows:
        return [], counts
    repos = sorted({r["repo_id"] for r in rows})
    specs = {(s.repo_id, s.full_name): s for s in load_theorems(store, repos, projects=projects or {})}
    steps = defaultdict(list)
    for t in snapshot.tactics(split_kind, "train").to_pylist():
        steps[t["theorem_id"]].append(t)
    sources, out = _Sources(projects or {}), []
    for r in rows:
        spec = specs.get((r["repo_id"], r["full_name"]))
        if spec is None:
            counts["skipped"] += 1
            continue
        proof, origin = None, "traced_source"
        text = sources.text(spec)
        decl = span_text(text, r["start"], r["end"]) if text and r["start"] and r["end"] else None
        if decl is not None:
            proof, _ = proof_of_declaration(decl)
        if proof is None:
            proof, origin = _chain(steps.get(r["theorem_id"], [])), "traced_tactics"
        if proof is None or is_sorry(proof):
            counts["skipped"] += 1
            continue
        counts[origin] += 1
        out.append(
            {
                "kind": "repo",
                "key": r["theorem_id"],
                "repo_id": r["repo_id"],
                "theorem_id": r["theorem_id"],
                "full_name": r["full_name"],
                "header": "",
                "statement": spec.statement,
                "informal": None,
                "proof": proof,
                "origin": origin,
            }
        )
    return out, counts
