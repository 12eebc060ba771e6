"""The one interface Dojoflow's proving and RL code uses to talk to Lean.

Four backends implement `LeanBackend` (docs/lean-backends.md): `repl` (the Lean REPL
through LeanInteract), `kimina` (a kimina-lean-server over HTTP, whole proofs only),
`leandojo` (lean-dojo's `Dojo`) and `replay` (traced transitions from the store,
no Lean at all). A backend only says what Lean (or replay) answered; whether a proof
counts as proved is `tasks.lean.verdict.judge`'s decision.

The shapes here are agreed with the search, proving and GRPO code: change them only
together with those.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from storage.tactic_text import NO_GOALS  # noqa: F401 (the one definition; replay.py reads it here)


@dataclass(frozen=True)
class TheoremSpec:
    """What a backend needs to start or check one theorem (built from the store by
    `tasks.lean.theorems`)."""

    repo_id: str
    url: str
    commit: str
    file_path: str  # path inside the repository, e.g. "NatBasics/Add.lean"
    full_name: str  # e.g. "NatBasics.add_zero'"
    statement: str  # Lean text of the declaration up to `:=`, e.g. "theorem add_zero' (n : Nat) : n + 0 = n"
    start: tuple[int, int] | None = None  # (line, column) of the declaration, when known


@dataclass(frozen=True)
class ProofState:
    key: str  # the backend's handle: REPL proofState id, Dojo state id, replay state hash (as str)
    goals: str  # pretty-printed goals, LeanDojo's `pp` form (goals separated by blank lines)
    goal_count: int | None = None  # how many goals Lean answered (the REPL's `goals` list); None: read `goals`


@dataclass(frozen=True)
class TacticResult:
    status: Literal["state", "finished", "error", "timeout"]
    state: ProofState | None = None  # set when status == "state"
    message: str = ""  # Lean's error, or why it timed out


@dataclass(frozen=True)
class ProofCheck:
    accepted: bool  # no error in Lean's answer to the proof; whether it is proved is verdict.judge's
    checker: str  # the backend's registered name (tasks/lean/registry.py)
    messages: tuple[str, ...] = ()  # Lean's messages (errors, warnings such as "declaration uses `sorry`")
    axioms: tuple[str, ...] = ()  # from `#print axioms` (empty when not available)
    error: str | None = None  # infrastructure failure or bad input (nothing was checked): not a rejection
    answers: object | None = None  # tasks.lean.verdict.LeanAnswers: Lean's answer per command; None if unknown
    timed_out: bool = False  # the backend's own time limit ran out on this proof (set with `error`)
    gold: object | None = None  # tasks.lean.gold.GoldResult: comparator's kernel replay; None: not run


@runtime_checkable
class LeanBackend(Protocol):
    name: str  # "repl" | "kimina" | "leandojo" | "replay"

    def start(self, theorem: TheoremSpec) -> TacticResult: ...

    def run_tactic(self, theorem: TheoremSpec, state: ProofState, tactic: str) -> TacticResult: ...

    def check_proof(self, theorem: TheoremSpec, proof: str) -> ProofCheck: ...  # proof = the tactic block after `:= by`

    def close(self) -> None: ...


class WrappedBackend:
    """A backend around another, `self.backend` (the verification cache, the gold gate): tactics go
    to it unchanged, and options and helpers the wrapper lacks are its own; `check_steps`, where
    the wrapped backend has it, is the wrapper's `_check_steps`. `_OWN`: attributes that are never
    the wrapped backend's (while a copy is being built they are not set yet: no recursion)."""

    _OWN: tuple[str, ...] = ("backend",)
    backend: LeanBackend

    def __getattr__(self, attr):
        if attr in self._OWN:
            raise AttributeError(attr)
        found = getattr(self.backend, attr)  # AttributeError where the backend has none
        return self._check_steps if attr == "check_steps" else found

    def start(self, theorem: TheoremSpec) -> TacticResult:
        return self.backend.start(theorem)

    def run_tactic(self, theorem: TheoremSpec, state: ProofState, tactic: str) -> TacticResult:
        return self.backend.run_tactic(theorem, state, tactic)

    def close(self) -> None:
        self.backend.close()


# Messages shared by the backends, so that every backend says the same thing for the same event.
SORRY_TACTIC = "proof contains `sorry`: a proof that gives up is not a step"


def forbidden_message(reason: str) -> str:
    """The TacticResult / ProofCheck message for text the guard kept away from Lean."""
    return f"not sent to Lean: {reason}"


def crash_message(what: str, detail: str) -> str:
    """The message of an infrastructure failure (the process died or hung), never a rejection."""
    return f"Lean process {what} ({detail}); it was replaced"
