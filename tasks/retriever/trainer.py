"""The dense premise retriever as a curriculum trainer: its one declaration (docs/adding-a-trainer.md)."""

from tasks.trainers.base import TrainerDef

from .config import RetrieverSettings

TRAINER = TrainerDef(
    name="retriever",
    settings=RetrieverSettings,
    train="tasks.retriever.train:train_retriever",
    evaluate="tasks.retriever.evaluate:evaluate_retriever",
    description="Dense premise retriever (Lightning bi-encoder with EWC); null turns it off.",
    holds="an encoder in save_pretrained layout, its tokenizer, its Fisher information (fisher.safetensors) "
    "and dojoflow_model.json (pooling, settings)",
    model_fields=("backbone",),
    preflight="tasks.retriever.config:preflight",
)
