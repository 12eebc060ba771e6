"""Errors of the retriever trainer. None is transient: retrying without a change fails again."""

from __future__ import annotations

from storage.errors import InputError


class BackboneMismatchError(InputError):
    """The configured backbone cannot continue from the parent checkpoint (hidden sizes differ)."""

    def __init__(self, backbone: str, backbone_hidden: int, parent_dir, parent_hidden: int):
        self.backbone = backbone
        self.backbone_hidden = backbone_hidden
        self.parent_dir = str(parent_dir)
        self.parent_hidden = parent_hidden
        super().__init__(
            source=f"backbone {backbone!r}",
            problem=(
                f"its hidden size is {backbone_hidden}, but the parent checkpoint {parent_dir} has hidden size "
                f"{parent_hidden}, so training cannot continue from the parent with this backbone"
            ),
            fix=(
                "Set `backbone` to the model the curriculum started from, or start a new curriculum "
                "(no parent checkpoint) to change the backbone."
            ),
        )


class FisherMismatchError(InputError):
    """A saved Fisher information does not belong to the checkpoint it sits beside."""

    def __init__(self, fisher_path, problem: str):
        self.fisher_path = str(fisher_path)
        super().__init__(
            source=fisher_path,
            problem=problem,
            fix=(
                "The Fisher file was computed for other weights (copied from another checkpoint, or the weights "
                "were changed afterwards). Delete fisher.safetensors and fisher.json to continue without EWC, "
                "or retrain the parent step to recompute them."
            ),
        )


class CheckpointError(InputError):
    """A checkpoint folder is missing files or cannot be loaded."""

    def __init__(self, checkpoint_dir, problem: str):
        self.checkpoint_dir = str(checkpoint_dir)
        super().__init__(
            source=checkpoint_dir,
            problem=problem,
            fix="Point to a folder written by `train_retriever` (or any `save_pretrained` encoder folder).",
        )
