"""Errors of the progress trainer. None is transient: retrying without a change fails again."""

from __future__ import annotations

from tasks.trainers.base import ParentMismatchError


class ModelMismatchError(ParentMismatchError):
    """The configured `model` cannot continue from the parent checkpoint (architecture or hidden size differ)."""

    def __init__(self, model: str, model_arch: tuple[str, int | None], parent_dir, parent_arch: tuple[str, int | None]):
        super().__init__(
            "model",
            model,
            parent_dir,
            f"it is a {model_arch[0]} model with hidden size {model_arch[1]}, but the parent checkpoint "
            f"{parent_dir} is a {parent_arch[0]} model with hidden size {parent_arch[1]}, and training "
            "continues from the parent's weights, so this model would not be used",
            "Set `model` to the model the curriculum started from, set `restart_from_base: true` to train "
            "this model from scratch at every step, or start a new curriculum (no parent checkpoint).",
            where="model",
        )
