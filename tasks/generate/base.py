"""The tactic-generator interface: proof states in, ranked (tactic, log-probability) lists out.

Every generator (a local checkpoint, retrieval-augmented, an OpenAI-compatible endpoint,
progress re-ranking around any of them) implements `TacticGenerator`, batched across
states so that a search can ask for the best open state of many theorems at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from storage.errors import DojoflowError, InputError

Candidates = list[tuple[str, float]]  # (tactic or proof, log-probability), in the order to try them


@dataclass(frozen=True)
class TacticQuery:
    """One proof state to generate for, with what the richer generators need."""

    goals: str  # the pretty-printed goals (LeanDojo's `pp` form)
    theorem: Any = None  # tasks.lean.backend.TheoremSpec: where retrieval looks for accessible premises
    prefix: tuple[str, ...] = ()  # tactics applied so far: what progress re-ranking conditions on


class TacticGenerator(Protocol):
    name: str  # "checkpoint" | "retrieval" | "endpoint" | "progress-reranked(...)"

    def generate(self, queries: Sequence[TacticQuery], k: int) -> list[Candidates]:
        """Up to `k` distinct tactics per query, in the order a search should try them."""

    def generate_proofs(self, queries: Sequence[TacticQuery], n: int) -> list[Candidates]:
        """Up to `n` complete proofs (tactic blocks after `:= by`) per query (whole-proof mode)."""

    def reseed(self, seed: int) -> None:
        """Fix the sampling seed (repeatable attempts); no effect on deterministic decoding."""

    def close(self) -> None: ...


class ProofWriter(Protocol):
    """How a checkpoint that writes whole proofs from a theorem's statement is asked, in the prompt it was
    trained on: what its trainer's `proof_writer` (tasks/trainers/base.py) returns; `CheckpointGenerator`
    (tasks/generate/checkpoint.py) asks it in whole-proof mode."""

    system_prompt: str

    def prompt(self, theorem) -> str:
        """The user prompt of a theorem (a `TacticQuery.theorem`)."""

    def generate(
        self, model, tokenizer, prompts: Sequence[str], n: int, *, system_prompt: str, max_new_tokens: int,
        decoding: str, temperature: float, tokens: list | None,
    ) -> list[Candidates]:  # fmt: skip
        """Up to `n` distinct proofs per prompt, best first."""


class NotAGeneratorError(InputError):
    """A checkpoint or model that cannot generate tactics (a retriever, a progress model...)."""


class EndpointError(DojoflowError):
    """An OpenAI-compatible endpoint failed or answered something unusable. `transient`
    when a retry can help (a timeout, a busy or failing server)."""

    def __init__(self, url: str, problem: str, fix: str, transient: bool = False):
        self.url, self.problem, self.fix, self.transient = url, problem, fix, transient
        super().__init__(f"{url}: {problem}. {fix}")
