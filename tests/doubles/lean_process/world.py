"""What the Lean process double knows: the sample's real transitions, and nothing else.

Every double (REPL, kimina-lean-server, Dojo) answers from this one model, so that
they agree with each other and with the sample's traced data: a theorem is known by
its statement; a tactic works on a state only if the sample traced that transition,
or if it is a step of one of the sample's known proofs
(storage/sample/content/known_proofs.py, kept out of the traced data: KNOWN_PROOFS of `sorry`
theorems, and ALTERNATIVE_PROOFS, `omega` on train theorems the sample traced otherwise, which
expert iteration's tests find and train on). A known step is answered in the shapes of the
REPL's transcripts like any other: `{"proofStatus": "Completed", "proofState": N, "goals": []}` when it closes the goal
(repl-upstream/test/proof_transitivity.expected.out; core.py builds every reply). A few
tactics exist only in the doubles, to exercise the guard and the process handling:

- `native_decide` closes any goal and makes the proof depend on `Lean.ofReduceBool`;
- `sorry` closes any goal and makes it depend on `sorryAx`;
- `double_crash` kills the process, `double_hang` never answers.

This module imports only the standard library and the sample's description, so that
the REPL double can run as a plain script in a minimal environment.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

NO_GOALS = "no goals"
CRASH, HANG = "double_crash", "double_hang"
NATIVE, SORRY = "native_decide", "sorry"
# The elaborator in the state /work/shared/reference/adversarial-classes.md (rows "kernel check
# switched off" and "auxiliary-lemma cache") describes: `decide +kernel` adds its auxiliary lemma
# through `mkAuxLemma` with no elaborator check (src/Lean/Elab/Tactic/Decide*.lean), and a lemma of
# the same type made once unchecked is handed back from the cache (src/Lean/Meta/Tactic/AuxLemma.lean):
# the goal closes, no error, no axiom listed. Only a kernel replay in a fresh build sees otherwise.
KERNEL_DECIDE = "decide +kernel"


def norm(text: str) -> str:
    return " ".join(text.split())


def _statement(code: str) -> str:
    text = re.sub(r"/--.*?-/", "", code, flags=re.S).strip()
    return norm(text.partition(":=")[0])


@dataclass
class WorldTheorem:
    repo: str
    full_name: str
    file_path: str
    statement: str
    initial: str | None
    steps: dict[str, dict[str, str]] = field(default_factory=dict)  # norm state -> norm tactic -> after
    known: set[tuple[str, str]] = field(default_factory=set)  # (norm state, norm tactic) of known proofs
    known_axioms: tuple[str, ...] = ()

    def add(self, before: str, tactic: str, after: str) -> None:
        if self.initial is None:
            self.initial = before
        self.steps.setdefault(norm(before), {})[norm(tactic)] = after


@dataclass
class Outcome:
    """Where a tactic or a proof leads: the state after (None if it failed), the axioms it used,
    and Lean's error when it failed."""

    state: str | None
    axioms: set[str]
    error: str = ""
    special: str | None = None  # CRASH or HANG


class LeanWorld:
    def __init__(self, sample_root: Path):
        self.theorems: dict[str, WorldTheorem] = {}  # norm statement -> theorem
        self.by_name: dict[str, WorldTheorem] = {}
        for repo_dir in sorted((sample_root / "leandojo").iterdir()):
            corpus = {
                p["full_name"]: p["code"]
                for line in (repo_dir / "corpus.jsonl").read_text().splitlines()
                for p in json.loads(line)["premises"]
            }
            for split in sorted((repo_dir / "random").glob("*.json")):
                for r in json.loads(split.read_text()):
                    stmt = norm(r["theorem_statement"] or _statement(corpus[r["full_name"]]))
                    t = WorldTheorem(repo_dir.name, r["full_name"], r["file_path"], stmt, None)
                    for s in r["traced_tactics"]:
                        t.add(s["state_before"], s["tactic"], s["state_after"])
                    self.theorems[stmt] = t
                    self.by_name[r["full_name"]] = t
        from storage.sample.content.known_proofs import ALTERNATIVE_PROOFS, KNOWN_PROOFS

        for kp in KNOWN_PROOFS + ALTERNATIVE_PROOFS:
            t = self.by_name[kp.full_name]
            state = t.initial
            for tactic, after in kp.steps:
                t.steps.setdefault(norm(state), {})[norm(tactic)] = after
                t.known.add((norm(state), norm(tactic)))
                state = after
            t.known_axioms = kp.axioms

    def theorem(self, statement: str) -> WorldTheorem | None:
        return self.theorems.get(norm(statement))

    def step(self, t: WorldTheorem, state: str, tactic: str) -> Outcome:
        """One tactic on one state."""
        tac = norm(tactic)
        if CRASH in tac:
            return Outcome(None, set(), special=CRASH)
        if HANG in tac:
            return Outcome(None, set(), special=HANG)
        goals = state.split("\n\n")
        if tac == KERNEL_DECIDE:
            return Outcome("\n\n".join(goals[1:]) or NO_GOALS, set())
        if tac in (NATIVE, SORRY):
            rest = "\n\n".join(goals[1:]) or NO_GOALS
            return Outcome(rest, {"Lean.ofReduceBool"} if tac == NATIVE else {"sorryAx"})
        after = t.steps.get(norm(state), {}).get(tac)
        if after is None:
            return Outcome(
                None, set(), error=f"tactic `{tactic.strip()}` failed (the double knows no such step)\n{state}"
            )
        axioms = {"sorryAx"} if tac == SORRY else set()
        if (norm(state), tac) in t.known:
            axioms |= set(t.known_axioms)
        return Outcome(after, axioms)

    def run_tactics(self, t: WorldTheorem, state: str, text: str) -> Outcome:
        """Tactics (one, or a block of several) from `state`: split into known steps, longest first."""
        rest, axioms = norm(text), set()
        while rest:
            if norm(state) == NO_GOALS:
                return Outcome(None, axioms, error=f"no goals to be proved (left: `{rest}`)")
            options = sorted(
                set(t.steps.get(norm(state), {})) | {NATIVE, SORRY, CRASH, HANG, KERNEL_DECIDE}, key=len, reverse=True
            )
            tac = next((o for o in options if rest.startswith(o) and rest[len(o) : len(o) + 1] in ("", " ", ";")), None)
            if tac is None:
                return Outcome(None, axioms, error=f"unsolved goals (the double knows no step `{rest}`)\n{state}")
            out = self.step(t, state, tac)
            if out.special or out.state is None:
                return out
            state, axioms = out.state, axioms | out.axioms
            rest = rest[len(tac) :].lstrip(" ;")
        return Outcome(state, axioms)

    def run_proof(self, t: WorldTheorem, proof: str) -> Outcome:
        """A whole tactic block from the initial state, which must close every goal."""
        if t.initial is None:
            return Outcome(None, set(), error=f"the double knows no goals for {t.full_name}")
        out = self.run_tactics(t, t.initial, proof)
        if out.state is not None and norm(out.state) != NO_GOALS:
            return Outcome(None, out.axioms, error=f"unsolved goals\n{out.state}")
        return out


def split_declaration(cmd: str) -> tuple[str, str, str] | None:
    """(text before, statement, proof) when a command ends with a `theorem`/`lemma` proved `by ...`
    (the declaration's own lines are its first line and the indented or blank lines after it);
    None for anything else, such as a file header, which the doubles take as it is."""
    lines = cmd.rstrip().split("\n")
    for i in range(len(lines) - 1, -1, -1):
        if re.match(r"(theorem|lemma)\s", lines[i]):
            if any(line.strip() and not line[:1].isspace() for line in lines[i + 1 :]):
                return None  # other commands follow the last theorem
            head, sep, proof = "\n".join(lines[i:]).partition(":= by")
            return ("\n".join(lines[:i]), head, proof) if sep else None
    return None
