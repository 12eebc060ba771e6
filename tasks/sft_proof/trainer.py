"""Whole-proof SFT as a curriculum trainer: its one declaration (docs/adding-a-trainer.md, docs/whole-proof.md)."""

from tasks.trainers.base import TrainerDef

from .config import SFTProofSettings

TRAINER = TrainerDef(
    name="sft_proof",
    settings=SFTProofSettings,
    train="tasks.sft_proof.train:train_sft_proof",
    evaluate="tasks.sft_proof.evaluate:evaluate_sft_proof",  # whole-proof sampling, pass@k, baseline
    description="Whole-proof SFT (statement -> whole proof; TRL SFTTrainer, completion-only loss, optional "
    "LoRA), trained on traced and verified whole proofs; null turns it off.",
    holds="a causal LM in save_pretrained layout (or a LoRA adapter on its base) that writes whole proofs, "
    "and its tokenizer",
    generates_tactics=True,  # its checkpoints search in whole-proof mode (tasks/generate/checkpoint.py)
    proof_writer="tasks.sft_proof.generate:proof_writer",  # asked from the statement, in its training prompt
    preflight="tasks.sft_proof.config:preflight",
    data="tasks.sft_proof.sources:step_snapshot",  # verified whole proofs join the step's snapshot
)
