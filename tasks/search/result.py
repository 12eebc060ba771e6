"""What a search is given (`SearchBudget`) and what it found (`SearchResult`): frozen records."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Literal

from storage.errors import InputError
from storage.lean_text import DEFAULT_ALLOWED_AXIOMS

# Why a search stopped. `proved`: a proof passed the verdict rule (tasks/lean/verdict.py);
# `unverified`: Lean finished a proof, but the backend cannot establish the rule (the Dojo:
# no axioms, no statement check), so it is kept out of pass@k;
# `exhausted`: no open state was left; `expansions` / `time`: a budget ran out;
# `error`: the backend failed (a crash, a hang, a theorem it cannot start). ReProver's rule
# (tasks/proving/evaluate.py): a theorem that could not start is left out of pass@k, an
# error during the search counts as a failure to prove.
StopReason = Literal["proved", "unverified", "exhausted", "expansions", "time", "error"]


@dataclass(frozen=True)
class SearchBudget:
    """Limits of one search of one theorem.

    `num_tactics`: tactics generated per expanded state (best-first) or proofs sampled
    (whole-proof); `max_expansions`: states expanded at most (None: no limit);
    `timeout_s`: wall-clock seconds per theorem.
    """

    num_tactics: int = 8
    max_expansions: int | None = 32
    timeout_s: float = 60.0
    allowed_axioms: tuple[str, ...] = DEFAULT_ALLOWED_AXIOMS  # the verdict rule's allow-list

    def __post_init__(self):
        if self.num_tactics < 1:
            raise InputError("num_tactics", f"is {self.num_tactics}", "generate at least 1 tactic per state")
        if self.max_expansions is not None and self.max_expansions < 1:
            raise InputError(
                "max_expansions",
                f"is {self.max_expansions}",
                "allow at least 1 expansion, or null for no limit (the time budget still applies)",
            )
        if not self.timeout_s > 0:
            raise InputError("timeout_s", f"is {self.timeout_s}", "give a positive number of seconds per theorem")


@dataclass(frozen=True)
class SearchResult:
    """The outcome of one search of one theorem."""

    full_name: str
    stopped: StopReason
    proof: tuple[str, ...] | None = None  # the tactics, in order (whole-proof mode: one tactic block)
    expansions: int = 0  # states expanded (best-first) or proofs checked (whole-proof)
    seconds: float = 0.0  # wall-clock time of this theorem's search
    checker: str = ""  # the backend that decided: repl | kimina | leandojo | replay
    axioms: tuple[str, ...] = ()  # of the proof found, as the backend reported them
    error: str | None = None  # the backend's failure when stopped == "error"
    rejected: tuple[str, ...] = field(default_factory=tuple)  # why finished proofs were not accepted (guard)
    attempts: int = 1  # independent tries this result stands for (whole-proof mode: proofs sampled)
    successes: int = 0  # of those, how many were proofs (for pass@k)
    unverified: tuple[str, ...] = ()  # finished proofs the backend could not verify (kept out of pass@k)
    started: bool = True  # False: the backend could not start the theorem (ReProver discards those from pass@k)
    states: tuple[str, ...] = ()  # best-first proofs: the goals Lean reported before each tactic of `proof`

    @property
    def proved(self) -> bool:
        return self.stopped == "proved"

    def to_dict(self) -> dict:
        d = asdict(self)
        d["proof"] = list(self.proof) if self.proof is not None else None
        d["axioms"], d["rejected"] = list(self.axioms), list(self.rejected)
        d["unverified"] = list(self.unverified)
        d["states"] = list(self.states)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "SearchResult":
        return cls(
            **{
                **d,
                "proof": tuple(d["proof"]) if d.get("proof") is not None else None,
                "axioms": tuple(d.get("axioms", ())),
                "rejected": tuple(d.get("rejected", ())),
                "unverified": tuple(d.get("unverified", ())),
                "states": tuple(d.get("states", ())),
            }
        )
