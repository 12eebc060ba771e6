"""The tactic generator a proof search runs, as the proving tasks pass it between them."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class GeneratorRef(BaseModel):
    """A checkpoint folder, or an endpoint's model (no folder), and the id its proofs, metrics
    and cached searches are recorded under."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    checkpoint_id: str = Field(
        description="A checkpoint's id; `folder-<fingerprint>` for a folder with no manifest; "
        "`endpoint:<model>` for an endpoint generator."
    )
    path: str | None = Field(None, description="The checkpoint folder; None: an endpoint generator with no folder.")

    @classmethod
    def of(cls, checkpoint) -> GeneratorRef:
        """A curriculum checkpoint (`tasks.checkpoints.CheckpointRef`) as the generator it holds."""
        return cls(checkpoint_id=checkpoint.checkpoint_id, path=checkpoint.path)
