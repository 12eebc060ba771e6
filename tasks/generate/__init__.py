"""Tactic generators for proof search: one interface (tasks/generate/base.py), four kinds.

from tasks.generate import GeneratorSettings, open_generator
gen = open_generator(GeneratorSettings(), checkpoint=".dojoflow/checkpoints/sft/<id>")
gen.generate([TacticQuery("⊢ True")], k=4)
"""

from __future__ import annotations

from pathlib import Path

from storage.errors import InputError

from .base import EndpointError, NotAGeneratorError, TacticGenerator, TacticQuery
from .config import EndpointSettings, GeneratorSettings

__all__ = [
    "EndpointError",
    "EndpointSettings",
    "GeneratorSettings",
    "NotAGeneratorError",
    "TacticGenerator",
    "TacticQuery",
    "open_generator",
]


def open_generator(
    settings: GeneratorSettings,
    checkpoint: str | Path | None = None,
    premises=None,
    model_cache_dir: str | Path | None = None,
) -> TacticGenerator:
    """The generator `settings` name. `checkpoint`: the tactic generator's folder (kinds
    `checkpoint` and `retrieval`); `premises`: a SnapshotRef or PremiseCorpus (`retrieval`)."""
    if settings.kind == "endpoint":
        from .endpoint import EndpointGenerator

        gen = EndpointGenerator.open(settings.endpoint, settings)
        if checkpoint is not None:  # the checkpoint that should search: its adapter, loaded if the server can
            gen.use_checkpoint(checkpoint)
    else:
        if checkpoint is None:
            raise InputError(
                "generator",
                f"`kind: {settings.kind}` needs a checkpoint",
                "give a tactic generator's checkpoint (`--checkpoint`), or train one with the SFT trainer",
            )
        from .checkpoint import CheckpointGenerator

        gen = CheckpointGenerator.load(checkpoint, settings, model_cache_dir)
        if settings.kind == "retrieval":
            if not settings.retriever_checkpoint or premises is None:
                raise InputError(
                    "generator.retriever_checkpoint",
                    "is not set",
                    "give a retriever checkpoint folder, or enable the retriever trainer in the curriculum",
                )
            from .retrieval import RetrievalGenerator

            gen = RetrievalGenerator.load(gen, settings.retriever_checkpoint, premises, settings.num_premises)
    if settings.progress_checkpoint:
        from .rerank import ProgressReranked

        gen = ProgressReranked.load(gen, settings.progress_checkpoint)
    return gen
