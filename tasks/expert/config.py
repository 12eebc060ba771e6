"""`ExpertIterationSettings`: the `expert_iteration` section of a pipeline config (off by default).

    python -c "from tasks.expert.config import ExpertIterationSettings as S; print(S())"

At each curriculum step, for `rounds` rounds, the step's tactic generator searches the pool's
theorems that have no verified proof yet; proofs the verifier's rule accepts are stored and the
generator trains on traced data plus found proofs, starting from the previous round's checkpoint
(docs/expert-iteration.md).
"""

from __future__ import annotations

from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, model_validator

from tasks.lean.registry import of
from tasks.proving.config import ProvingSettings


class PoolSettings(BaseModel):
    """Which theorems a round searches. val and test theorems never are."""

    model_config = ConfigDict(extra="forbid")

    include_sorry: bool = Field(
        True,
        description="Also search the train split's `sorry` theorems (LeanAgent's setting); their found "
        "proofs train the generator like any other.",
    )
    max_theorems: Optional[int] = Field(
        None,
        ge=1,
        description="Theorems per repository and round at most (a fixed hash of the theorem id chooses "
        "them, so rounds try the same ones); null: every theorem without a verified proof.",
    )


class WholeProofSettings(BaseModel):
    """Whole-proof expert iteration (`mode: whole_proof`): sample, keep, stop (docs/whole-proof.md)."""

    model_config = ConfigDict(extra="forbid")

    samples: int = Field(
        8, ge=1, le=4096, description="Whole proofs sampled per statement and round (k); each is checked by Lean."
    )
    keep: int = Field(
        4, ge=1, le=1024, description="Distinct verified proofs kept per statement at most (m), shortest first."
    )
    stop_after: int = Field(
        1,
        ge=1,
        le=1024,
        description="A statement leaves the pool once it holds this many kept proofs (n, at most `keep`).",
    )
    repositories: bool = Field(True, description="The pool holds the train theorems of every repository seen so far.")
    statement_sets: list[str] = Field(
        default_factory=list,
        description="Statement sets (dojoflow import-statements) whose train statements join the pool; their "
        "verified proofs train too. Never a benchmark or a held-out statement (the contamination gate).",
    )
    max_statements: Optional[int] = Field(
        None, ge=1, description="Statements per round at most (a fixed hash chooses them); null: the whole pool."
    )
    lean_version: Optional[str] = Field(
        None,
        description="The Lean version the search backend checks the statement sets with (e.g. v4.15.0: the kimina "
        "server's toolchain). A set written for another Lean is refused before any training (its proofs would be "
        "checked, and recorded, under the wrong toolchain); null: not known, not checked.",
    )

    @model_validator(mode="after")
    def _check(self):
        if self.stop_after > self.keep:
            raise ValueError(f"stop_after={self.stop_after} can never be reached with keep={self.keep}: lower it")
        if not self.repositories and not self.statement_sets:
            raise ValueError("the pool is empty: set `repositories: true` or name `statement_sets`")
        return self


class ExpertIterationSettings(BaseModel):
    """Rounds of search -> verified proofs -> training inside each curriculum step."""

    model_config = ConfigDict(extra="forbid")

    rounds: int = Field(2, ge=1, le=100, description="Rounds per curriculum step (search, then train).")
    mode: Literal["tactic", "whole_proof"] = Field(
        "tactic",
        description="`tactic`: found proofs become (state, tactic) pairs for a tactic generator (sft); "
        "`whole_proof`: every verified whole proof trains the whole-proof trainer (`trainer: sft_proof`), "
        "with `whole_proof`'s sampling, keeping and stopping rules.",
    )
    whole_proof: WholeProofSettings = Field(
        default_factory=WholeProofSettings, description="`mode: whole_proof`: samples per statement, kept proofs, pool."
    )
    trainer: str = Field(
        "sft",
        description="The trainer whose checkpoint searches and which trains on the found proofs (an SFT "
        "tactic generator).",
    )
    pool: PoolSettings = Field(default_factory=PoolSettings, description="Which theorems are searched.")
    search: Optional[ProvingSettings] = Field(
        None,
        description="Backend, generator, search mode, budgets (expansions, wall-clock, attempts) and batch "
        "size of a round's search (tasks/proving/config.py; its `splits` and `max_theorems` are not used: "
        "the pool decides). null: those of `evaluation.proving`.",
    )
    found_to_traced: float = Field(
        0.5,
        gt=0,
        le=100,
        description="Mixing ratio: found (state, tactic) pairs per traced pair in a round's training set. "
        "Found pairs are repeated to approach it and never dropped (a ratio below what was found "
        "trains on each once); a pair already in the traced data is not added again.",
    )
    training: dict = Field(
        default_factory=dict,
        description="Overrides of the trainer's `training` arguments for the rounds' training (e.g. "
        "{max_steps: 40}); empty: the step's own.",
    )
    continue_from_last: bool = Field(
        False,
        description="Start the first step's training from the newest checkpoint an expert-iteration round "
        "trained in this home, instead of the base model: a nightly run on a new commit continues where "
        "the last run's rounds ended (with the proofs they found, which carry over while the statement and "
        "toolchain are unchanged).",
    )
    evaluate_rounds: bool = Field(
        True,
        description="Run the proving evaluation (`evaluation.proving`) on each round's checkpoint: pass@k on "
        "val and test per round.",
    )

    @model_validator(mode="after")
    def _check(self):
        if (self.mode == "whole_proof") != (self.trainer == "sft_proof"):
            raise ValueError(
                f"`mode: {self.mode}` with `trainer: {self.trainer}`: whole-proof expert iteration trains the "
                "whole-proof trainer (`mode: whole_proof` with `trainer: sft_proof`), tactic mode a tactic generator"
            )
        if self.search is not None and of(self.search.backend).lower_bound:
            raise ValueError(
                f"`search.backend.kind: {self.search.backend.kind}` cannot verify a proof (it accepts only traced steps, so it "
                "finds nothing that is not traced data already): use repl, kimina or leandojo with `recheck`"
            )
        return self
