"""The proof-progress model as a curriculum trainer: its one declaration (docs/adding-a-trainer.md)."""

from tasks.trainers.base import TrainerDef

from .config import ProgressSettings

TRAINER = TrainerDef(
    name="progress",
    settings=ProgressSettings,
    train="tasks.progress.train:train_progress",
    evaluate="tasks.progress.evaluate:evaluate_progress",
    description="Proof-progress model (regression of steps remaining); null turns it off.",
    holds="a one-output regression encoder in save_pretrained layout, its tokenizer and dojoflow_model.json "
    "(input template, target convention)",
    preflight="tasks.progress.config:preflight",
)
