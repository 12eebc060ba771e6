"""The `replay` backend: Lean's answers as they were traced, from the store alone.

A tactic succeeds only if exactly that transition (state before, tactic after
whitespace normalisation) was traced in this theorem, and it leads to the traced
state after; `no goals` means the proof is finished. Nothing else is accepted, so
replay is exact and a strict lower bound of what Lean would accept, with no Lean at
all. Its checker is "replay", never presented as Lean's verdict. See docs/lean-backends.md.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from storage.errors import InputError
from storage.tactic_text import is_sorry

from .backend import NO_GOALS, SORRY_TACTIC, ProofCheck, ProofState, TacticResult, TheoremSpec, forbidden_message
from .guard import forbidden_construct


def normalize(text: str) -> str:
    """Whitespace runs to one space: how replay compares tactics and states."""
    return " ".join(text.split())


def state_key(goals: str) -> str:
    return hashlib.sha1(normalize(goals).encode()).hexdigest()[:16]


@dataclass
class TheoremTransitions:
    """The traced transitions of one theorem: {state: {tactic: state after}}, normalised keys."""

    initial: str | None = None
    steps: dict[str, dict[str, str]] = field(default_factory=dict)
    tactics: dict[str, dict[str, str]] = field(default_factory=dict)  # normalised -> as traced

    def add(self, before: str, tactic: str, after: str) -> None:
        if self.initial is None:
            self.initial = before
        self.steps.setdefault(normalize(before), {})[normalize(tactic)] = after
        self.tactics.setdefault(normalize(before), {})[normalize(tactic)] = tactic

    def after(self, state: str, tactic: str) -> str | None:
        return self.steps.get(normalize(state), {}).get(normalize(tactic))

    def split(self, proof: str) -> tuple[list[str], str] | None:
        """The proof as traced tactics from the initial state (longest match first), and the
        state it ends in; None when some part of it matches no traced transition."""
        rest, state, used = normalize(proof), self.initial, []
        while rest:
            options = sorted(self.steps.get(normalize(state or ""), {}), key=len, reverse=True)
            for tac in options:
                if rest.startswith(tac) and (len(rest) == len(tac) or rest[len(tac)] in " ;"):
                    used.append(self.tactics[normalize(state)][tac])
                    state = self.steps[normalize(state)][tac]
                    rest = rest[len(tac) :].lstrip(" ;")
                    break
            else:
                return None
        return used, state or ""


class ReplayBackend:
    """Answers from the store's `tactics` table; holds one theorem's transitions at a time per repository."""

    name = "replay"

    def __init__(self, store):
        self.store = store
        self._by_repo: dict[str, dict[tuple[str, str], TheoremTransitions]] = {}

    def transitions(self, theorem: TheoremSpec) -> TheoremTransitions:
        if theorem.repo_id not in self._by_repo:
            table = self.store.read_table(
                "tactics",
                [theorem.repo_id],
                columns=["file_path", "full_name", "idx", "tactic", "state_before", "state_after"],
            )
            by_theorem: dict[tuple[str, str], TheoremTransitions] = {}
            for row in sorted(table.to_pylist(), key=lambda r: (r["file_path"], r["full_name"], r["idx"])):
                by_theorem.setdefault((row["file_path"], row["full_name"]), TheoremTransitions()).add(
                    row["state_before"], row["tactic"], row["state_after"]
                )
            self._by_repo[theorem.repo_id] = by_theorem
        return self._by_repo[theorem.repo_id].get((theorem.file_path, theorem.full_name), TheoremTransitions())

    def start(self, theorem: TheoremSpec) -> TacticResult:
        initial = self.transitions(theorem).initial
        if initial is None:
            return TacticResult("error", message=f"replay: {theorem.full_name} has no traced tactic proof to replay")
        return TacticResult("state", ProofState(state_key(initial), initial))

    def run_tactic(self, theorem: TheoremSpec, state: ProofState, tactic: str) -> TacticResult:
        why = forbidden_construct(tactic)
        if why is not None:
            return TacticResult("error", message=forbidden_message(why))
        if is_sorry(tactic):
            return TacticResult("error", message=SORRY_TACTIC)
        after = self.transitions(theorem).after(state.goals, tactic)
        if after is None:
            return TacticResult("error", message="replay: this tactic was not traced from this state")
        if normalize(after) == NO_GOALS:
            return TacticResult("finished")
        return TacticResult("state", ProofState(state_key(after), after))

    def check_proof(self, theorem: TheoremSpec, proof: str) -> ProofCheck:
        why = forbidden_construct(proof)
        if why is not None:
            return ProofCheck(False, self.name, (forbidden_message(why),))
        found = self.transitions(theorem).split(proof)
        if found is None:
            return ProofCheck(False, self.name, ("replay: the proof is not a sequence of traced tactics",))
        tactics, end = found
        if normalize(end) != NO_GOALS:
            return ProofCheck(False, self.name, (f"replay: unsolved goals\n{end}",))
        # As Lean does, a proof through `sorry` is accepted with a warning (the guard rejects it).
        warnings = ("declaration uses `sorry`",) if any(is_sorry(t) for t in tactics) else ()
        return ProofCheck(True, self.name, warnings)

    def close(self) -> None:
        self._by_repo.clear()


def check_replay(settings) -> None:
    """The replay backend's `available` (tasks/lean/registry.py): it answers from the store, nothing to install."""


def open_replay(settings, store):
    """The replay backend's `opener` (tasks/lean/registry.py)."""
    if store is None:
        raise InputError(
            "backend.kind: replay",
            "the replay backend answers from a store, and none was given",
            "open the store first (`Store.open(home)`) and pass it",
        )
    return ReplayBackend(store)
