"""Settings of whole-proof SFT (`trainers.sft_proof`), and their conversion into `trl.SFTConfig`.

The model learns to write a whole proof from a statement: prompt = the header (imports, opens) and
the statement ending in `:= by` (with the informal statement as a comment above it when the data has
one), completion = the tactic block. LoRA, `training:` (passed through to `trl.SFTConfig`, checked
by the one check every trainer shares) and the starting point follow SFT's rules exactly
(docs/sft.md); evaluation is pass@k of whole-proof sampling through a Lean backend (docs/whole-proof.md).

    python -c "from tasks.sft_proof.config import SFTProofSettings as S; print(S())"
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from tasks.lean.config import BackendSettings
from tasks.sft.config import CausalLMSettings, Lora, build_sft_config
from tasks.trainers.fields import ProofTemperature, ProofTokens, RestartFromBase, SamplerSeed, evaluation_field
from tasks.trainers.time_checkpoints import checkpoint_every_minutes_field
from tasks.trainers.training_args import check_by_building

PROOF_SYSTEM_PROMPT = (
    "You are a Lean 4 prover. Given a Lean 4 theorem statement ending in `:= by`, reply with the "
    "complete tactic proof that follows it, and nothing else."
)


class SFTProofEvalSettings(BaseModel):
    """How a whole-proof checkpoint is scored: pass@k of sampled whole proofs, judged by a Lean backend."""

    model_config = ConfigDict(extra="forbid")

    backend: BackendSettings = Field(
        default_factory=BackendSettings,
        description="The backend that checks each sampled proof (tasks/lean/config.py). `replay` (the "
        "default, no Lean) accepts only proofs made of traced steps and names every metric `replay_pass@k`; "
        "`repl`/`kimina` are Lean's verdicts (`repl_pass@k`).",
    )
    k: int = Field(
        4, ge=1, le=1024, description="Proofs sampled per theorem; pass@1 and pass@k are estimated from them."
    )
    max_theorems: int | None = Field(
        12, ge=1, description="Theorems per repository and split at most (a fixed hash chooses them); null: all."
    )
    temperature: ProofTemperature = 1.0
    max_proof_tokens: ProofTokens = Field(128, le=16384)
    timeout_s: float = Field(120.0, gt=0, description="Wall-clock seconds to check one theorem's samples.")
    baseline: bool = Field(
        True,
        description="Also score the closing-tactics baseline (`simp`, `rfl`, `omega`, ... each a one-tactic "
        "proof) on the same theorems with the same backend and k: `baseline_<checker>_pass@k`.",
    )
    seed: SamplerSeed = 0


class SFTProofSettings(CausalLMSettings):
    """Supervised fine-tuning of a whole-proof writer on (statement -> whole proof) pairs."""

    system_prompt: str = Field(PROOF_SYSTEM_PROMPT, description="System message of every example (chat models).")
    include_header: bool = Field(
        True, description="Put the statement's header (imports, opens) before it in the prompt, when it has one."
    )
    include_informal: bool = Field(
        True, description="Put the informal statement, when the data has one, as a comment above the statement."
    )
    traced_proofs: bool = Field(
        True,
        description="Train on the traced theorems' whole proofs (read back from their source spans, else "
        "their traced tactics) of the snapshot's train split, besides the verified proofs a round adds.",
    )
    statement_sets: list[str] = Field(
        default_factory=list,
        description="Statement sets whose verified proofs (a Lean verdict's, never a claimed proof; never a "
        "benchmark or held-out statement) train too at each curriculum step; they join the step's snapshot as "
        "a proof snapshot whose id hashes them, so new proofs mean a new checkpoint, never a stale one. Proofs "
        "whole-proof expert iteration found enter through its rounds instead.",
    )
    projects: dict[str, str] = Field(
        default_factory=dict,
        description="Local checkouts of the repositories ({name or repo id: folder}) to read traced proofs "
        "from; the sample's own sources need none. Without a checkout a traced proof is its traced tactics.",
    )
    max_proof_chars: int = Field(
        4000, ge=16, description="Proofs longer than this (characters) are left out of training (counted)."
    )
    lora: Lora = None
    training: dict[str, Any] = Field(
        default_factory=dict,
        description="Arguments of trl.SFTConfig (learning_rate, num_train_epochs, max_steps, "
        "per_device_train_batch_size, bf16, max_length, ...), over Dojoflow's defaults as for `sft` "
        "(completion_only_loss on: the loss falls on the proof only).",
    )
    restart_from_base: RestartFromBase = False
    checkpoint_every_minutes: float = checkpoint_every_minutes_field()
    evaluation: SFTProofEvalSettings = evaluation_field(SFTProofEvalSettings)


def preflight(settings: SFTProofSettings, field: str) -> None:
    """Before a run: `training` against trl.SFTConfig and this machine; the evaluation backend's kind."""
    check_by_building(build_config, settings, field)


# The `trl.SFTConfig` of a training step on this machine: SFT's own (the same defaults and checks).
build_config = build_sft_config
