"""Errors of the progress trainer. None is transient: retrying without a change fails again."""

from __future__ import annotations

from storage.errors import InputError


class ModelMismatchError(InputError):
    """The configured `model` cannot continue from the parent checkpoint (architecture or hidden size differ).

    With a parent checkpoint, training continues from the parent's weights; `model` only
    names the base of the curriculum. A `model` of another architecture or width would be
    ignored there, so it is refused rather than silently not used.
    """

    def __init__(self, model: str, model_arch: tuple[str, int | None], parent_dir, parent_arch: tuple[str, int | None]):
        self.model = model
        self.model_arch = model_arch
        self.parent_dir = str(parent_dir)
        self.parent_arch = parent_arch
        super().__init__(
            source=f"model {model!r}",
            problem=(
                f"it is a {model_arch[0]} model with hidden size {model_arch[1]}, but the parent checkpoint "
                f"{parent_dir} is a {parent_arch[0]} model with hidden size {parent_arch[1]}, and training "
                "continues from the parent's weights, so this model would not be used"
            ),
            fix=(
                "Set `model` to the model the curriculum started from, set `restart_from_base: true` to train "
                "this model from scratch at every step, or start a new curriculum (no parent checkpoint)."
            ),
            where="model",
        )
