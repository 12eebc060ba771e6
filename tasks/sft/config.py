"""Settings of the SFT tactic generator, and their conversion into `trl.SFTConfig`.

`SFTSettings` is what a user writes in the curriculum config (YAML or the Prefect
form). Training hyperparameters are not re-declared here: `training` is a dict of
`trl.SFTConfig` arguments, checked before a run and when the config is built by the
one check every trainer shares (`tasks/trainers/training_args.py`: unknown keys, wrong
types and values that would train nothing are errors naming the key), and merged at
training time over defaults chosen for the model and the machine the step runs on
(`build_sft_config`). Only what the user wrote is stored, so a checkpoint id does not
depend on which machine validated the config. Building these settings imports no torch.

    python -c "from tasks.sft.config import SFTSettings; print(SFTSettings(training={'max_steps': 5}))"
"""

from __future__ import annotations

import functools
import os
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from tasks.trainers.fields import ModelDtype, RestartFromBase, evaluation_field
from tasks.trainers.launch import LaunchSettings, launch_field
from tasks.trainers.time_checkpoints import checkpoint_every_minutes_field
from tasks.trainers.training_args import (  # noqa: F401  (device_capabilities: GRPO's vLLM check)
    build_training_config,
    capabilities_unless_given,
    check_by_building,
    check_training_args,
    device_capabilities,
)

DEFAULT_MODEL = "builtin:tiny-causal-lm"
DEFAULT_SYSTEM_PROMPT = (
    "You are a Lean 4 tactic generator. Given a proof state, reply with the single next tactic "
    "that makes progress on it, and nothing else."
)

# Defaults for the tiny builtin model, which starts from random weights: at TRL's
# learning rate (2e-5) and one epoch it learns nothing visible on the sample.
TINY_MODEL_TRAINING = {"learning_rate": 1e-3, "num_train_epochs": 6}


class LoraSettings(BaseModel):
    """LoRA adapters instead of full fine-tuning (PEFT `LoraConfig`)."""

    model_config = ConfigDict(extra="forbid")

    r: int = Field(16, ge=1, description="Rank of the LoRA update matrices.")
    alpha: float = Field(
        32.0, gt=0, description="LoRA scale numerator (`lora_alpha`): updates are scaled by alpha / r."
    )
    dropout: float = Field(0.05, ge=0.0, lt=1.0, description="Dropout applied to the input of each LoRA layer.")
    target_modules: list[str] | Literal["all-linear"] = Field(
        "all-linear",
        description="Module names to adapt (e.g. ['q_proj', 'v_proj']), or 'all-linear' for every linear "
        "layer except the output head.",
    )

    def to_peft(self):
        from peft import LoraConfig

        targets = self.target_modules if isinstance(self.target_modules, str) else list(self.target_modules)
        return LoraConfig(
            r=self.r,
            lora_alpha=self.alpha,
            lora_dropout=self.dropout,
            target_modules=targets,
            task_type="CAUSAL_LM",
        )


# The fields the causal-LM trainers (sft, sft_proof, grpo) declare with one meaning; their default
# is given where they are used.
BaseModelName = Annotated[
    str,
    Field(
        description="Base model, started from when there is no parent checkpoint (or with "
        "restart_from_base): 'builtin:tiny-causal-lm' (built locally, offline: for tests and the default "
        "run), a local save_pretrained folder, or a Hugging Face hub id (e.g. deepseek-ai/DeepSeek-Prover-V2-7B)."
    ),
]
Lora = Annotated[
    LoraSettings | None,
    Field(description="LoRA adapter settings; None trains all weights (full fine-tuning)."),
]


class CausalLMSettings(BaseModel):
    """The fields a supervised causal-LM trainer's settings begin with (sft, sft_proof): the base model
    and the dtype it is loaded in. (grpo declares the same two types with a field between them.)"""

    model_config = ConfigDict(extra="forbid")

    model: BaseModelName = DEFAULT_MODEL
    model_dtype: ModelDtype = "auto"


class SFTEvalSettings(BaseModel):
    """How a tactic generator is scored on each (repository, split)."""

    model_config = ConfigDict(extra="forbid")

    top_k: int = Field(4, ge=1, le=256, description="k of top-k accuracy: how many tactics are generated per state.")
    decoding: Literal["beam", "sample"] = Field(
        "beam", description="'beam': beam search with k beams (deterministic); 'sample': k samples."
    )
    temperature: float = Field(1.0, gt=0.0, description="Sampling temperature; used only when decoding is 'sample'.")
    max_new_tokens: int = Field(48, ge=1, le=4096, description="Longest tactic generated, in tokens.")
    max_eval_examples: int | None = Field(
        32,
        ge=1,
        description="Most tactic examples scored per (repository, split), drawn by a fixed hash of the "
        "theorem and step so every checkpoint sees the same ones; None scores them all. Generation "
        "costs far more than training per example: the default keeps evaluation well under training time.",
    )
    batch_size: int = Field(
        32,
        ge=1,
        description="States per forward pass (loss) and per generate call "
        "(left-padded; batching is most of evaluation's speed).",
    )
    seed: int = Field(0, description="Seed of the sampler when decoding is 'sample'.")


class SFTSettings(CausalLMSettings):
    """Supervised fine-tuning of a tactic generator on (proof state -> next tactic) pairs."""

    system_prompt: str = Field(DEFAULT_SYSTEM_PROMPT, description="System message of every chat example.")
    max_state_tokens: int | None = Field(
        768,
        ge=8,
        description="Longest proof state in the prompt, in tokens; longer states keep their end (the goal "
        "follows the hypotheses) and lose their beginning. None keeps whole states (TRL then drops "
        "examples whose tactic falls past training.max_length).",
    )
    lora: Lora = None
    training: dict[str, Any] = Field(
        default_factory=dict,
        description="Arguments of trl.SFTConfig (learning_rate, num_train_epochs, max_steps, "
        "per_device_train_batch_size, bf16, ...). Unset ones get Dojoflow's defaults for the machine "
        "the step runs on (CPU: use_cpu, no bf16/fp16, no activation checkpointing; GPU: bf16 where "
        "supported; the tiny builtin model, which starts from random weights: learning_rate 1e-3 and "
        "6 epochs). output_dir and resume_from_checkpoint are set by Dojoflow.",
    )
    restart_from_base: RestartFromBase = False
    checkpoint_every_minutes: float = checkpoint_every_minutes_field()
    launch: LaunchSettings | None = launch_field()
    evaluation: SFTEvalSettings = evaluation_field(SFTEvalSettings)


# -- SFTConfig arguments ----------------------------------------------------------------


def default_training_args(user: dict[str, Any], cuda: bool, bf16_ok: bool) -> dict[str, Any]:
    """Dojoflow's defaults for the SFTConfig arguments the user left unset."""
    defaults: dict[str, Any] = {
        "report_to": "none",
        "num_train_epochs": 1,
        "per_device_train_batch_size": 8,
        "logging_steps": 10,
        "save_strategy": "steps",
        "save_steps": 200,
        "save_total_limit": 2,
        "packing": False,  # one example per sequence, as the chat format expects
        "completion_only_loss": True,  # loss on the tactic only
    }
    if cuda:
        defaults.update(bf16=bf16_ok, fp16=False)
    else:
        # TRL defaults to bf16 and activation checkpointing, which fail or only slow down on CPU.
        defaults.update(use_cpu=True, bf16=False, fp16=False)
        if "gradient_checkpointing" not in user and "activation_checkpointing" not in user:
            defaults[checkpointing_key()] = False
    return {k: v for k, v in defaults.items() if k not in user}


def checkpointing_key(fields: set[str] | None = None) -> str:
    """The TrainingArguments name that turns activation checkpointing off: `activation_checkpointing`
    in transformers 5.23 (`gradient_checkpointing` a deprecated alias there), only
    `gradient_checkpointing` in 5.17 (the `train-vllm` pin). `fields`: the class's field names."""
    if fields is None:
        import dataclasses

        from transformers import TrainingArguments

        fields = {f.name for f in dataclasses.fields(TrainingArguments)}
    return "activation_checkpointing" if "activation_checkpointing" in fields else "gradient_checkpointing"


def training_defaults(settings, cuda: bool, bf16_ok: bool) -> dict[str, Any]:
    """Dojoflow's values under the user's `training` for this model on this machine (settings
    with `model` and `training`: SFT's and whole-proof SFT's)."""
    user = settings.training
    tiny = {k: v for k, v in TINY_MODEL_TRAINING.items() if k not in user} if settings.model == DEFAULT_MODEL else {}
    return {**default_training_args(user, cuda, bf16_ok), **tiny}


def preflight(settings: SFTSettings, field: str) -> None:
    """Before a run: `training` against trl.SFTConfig, and mixed precision against this machine."""
    check_by_building(build_sft_config, settings, field)


def build_sft_config(
    settings: SFTSettings,
    output_dir: str | os.PathLike,
    *,
    cuda: bool | None = None,
    bf16_ok: bool | None = None,
    field: str = "training",
):
    """The `trl.SFTConfig` for a training step on this machine (capabilities detected unless given);
    `training` is checked by `tasks.trainers.training_args` (errors name `field`)."""
    defaults = functools.partial(training_defaults, settings)
    return build_training_config(
        "trl:SFTConfig", settings, output_dir, defaults, cuda=cuda, bf16_ok=bf16_ok, field=field
    )
