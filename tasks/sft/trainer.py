"""The SFT tactic generator as a curriculum trainer: its one declaration (docs/adding-a-trainer.md)."""

from tasks.trainers.base import TrainerDef

from .config import SFTSettings

TRAINER = TrainerDef(
    name="sft",
    settings=SFTSettings,
    train="tasks.sft.train:train_sft",
    evaluate="tasks.sft.evaluate:evaluate_sft",
    description="SFT tactic generator (TRL SFTTrainer, optional LoRA); null turns it off.",
    holds="a causal LM in save_pretrained layout (or a LoRA adapter on its base) and its tokenizer",
    generates_tactics=True,
    preflight="tasks.sft.config:preflight",
    enabled_by_default=True,
)
