"""The GRPO family as a curriculum trainer: its one declaration (docs/adding-a-trainer.md, docs/grpo.md)."""

from tasks.trainers.base import TrainerDef

from .config import GRPOSettings

TRAINER = TrainerDef(
    name="grpo",
    settings=GRPOSettings,
    train="tasks.grpo.train:train_grpo",
    evaluate="tasks.grpo.evaluate:evaluate_grpo",
    description="GRPO family (grpo, dr_grpo, dapo, gspo, dgpo) with rewards decided by a Lean backend; "
    "init_from: sft starts each step from the SFT checkpoint of that step; null turns it off.",
    holds="a causal LM in save_pretrained layout (or a LoRA adapter on its base) and its tokenizer, "
    "with grpo_history.json (per-step rewards)",
    generates_tactics=True,
    preflight="tasks.grpo.config:preflight",
)
