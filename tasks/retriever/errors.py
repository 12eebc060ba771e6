"""Errors of the retriever trainer. None is transient: retrying without a change fails again."""

from __future__ import annotations

from storage.errors import InputError
from tasks.trainers.base import ParentMismatchError


class BackboneMismatchError(ParentMismatchError):
    """The configured backbone cannot continue from the parent checkpoint (hidden sizes differ)."""

    def __init__(self, backbone: str, backbone_hidden: int, parent_dir, parent_hidden: int):
        super().__init__(
            "backbone",
            backbone,
            parent_dir,
            f"its hidden size is {backbone_hidden}, but the parent checkpoint {parent_dir} has hidden size "
            f"{parent_hidden}, so training cannot continue from the parent with this backbone",
            "Set `backbone` to the model the curriculum started from, or start a new curriculum "
            "(no parent checkpoint) to change the backbone.",
        )


class _FileError(InputError):
    """A file or folder (`path`) that cannot be used, with the class's one fix."""

    FIX = ""

    def __init__(self, path, problem: str):
        self.path = str(path)
        super().__init__(source=path, problem=problem, fix=self.FIX)


class FisherMismatchError(_FileError):
    """A saved Fisher information does not belong to the checkpoint it sits beside."""

    FIX = (
        "The Fisher file was computed for other weights (copied from another checkpoint, or the weights "
        "were changed afterwards). Delete fisher.safetensors and fisher.json to continue without EWC, "
        "or retrain the parent step to recompute them."
    )


class CheckpointError(_FileError):
    """A checkpoint folder is missing files or cannot be loaded."""

    FIX = "Point to a folder written by `train_retriever` (or any `save_pretrained` encoder folder)."
