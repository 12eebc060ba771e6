"""Settings fields that several trainers declare with one meaning, declared once here: each an
`Annotated` type carrying its description, the default given where it is used.

- `ModelDtype`: the dtype a Hugging Face model's weights are loaded in (sft, sft_proof, grpo).
- `RestartFromBase`: start every curriculum step from the base model (`tasks/trainers/lifecycle.py`:
  `continues`; every trainer with a parent checkpoint).
- `evaluation_field`: a trainer's `evaluation` section (its own settings model), which scores a
  checkpoint and is no part of its id (sft, sft_proof, grpo).
- `ProofTemperature`, `ProofTokens`, `SamplerSeed`: how an evaluation by whole-proof sampling
  (pass@k) samples its proofs (sft_proof, grpo); each model gives its own default and bounds.

    python -c "from tasks.trainers.fields import ModelDtype; print(ModelDtype)"
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

ModelDtype = Annotated[
    Literal["auto", "float32", "bfloat16", "float16"],
    Field(
        description="dtype the model weights are loaded in; 'auto' uses the dtype in the model's config. "
        "Mixed precision during training is training.bf16 / training.fp16."
    ),
]

RestartFromBase = Annotated[
    bool,
    Field(
        description="Start every curriculum step from the base `model` instead of its parent checkpoint "
        "(by default the previous step's): an ablation; False continues from the parent, as a curriculum should."
    ),
]


def evaluation_field(settings: type):
    """The `evaluation` field of a trainer whose evaluation has its own settings model `settings`."""
    return Field(
        default_factory=settings,
        description="How checkpoints are scored (changing it re-evaluates, never retrains).",
        json_schema_extra={"checkpoint_id": False},  # tasks/checkpoints.py: not part of the checkpoint id
    )


ProofTemperature = Annotated[float, Field(gt=0.0, description="Sampling temperature of the proofs.")]
ProofTokens = Annotated[int, Field(ge=1, description="Longest proof generated, in tokens.")]
SamplerSeed = Annotated[int, Field(description="Seed of the sampler.")]
