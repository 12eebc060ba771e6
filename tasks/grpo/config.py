"""Settings of the GRPO trainer, and their conversion into `trl.GRPOConfig`.

`GRPOSettings` is the `grpo:` section of a curriculum config (and what `dojoflow grpo
train` builds from lean-grpo's options). The algorithm is named (`algorithm`) and
tuned (`algorithm_config`, keys checked per algorithm, `tasks.grpo.algorithms`);
`training` is passed through to `trl.GRPOConfig` and checked against its fields;
the settings an algorithm defines (loss_type, scale_rewards, epsilon, beta, ...) are
the algorithm's and are refused in `training`. Rewards are named with weights; their
knobs are in `reward` (or a lean-grpo preset). See docs/grpo.md.

    python -c "from tasks.grpo.config import GRPOSettings; print(GRPOSettings(algorithm='dapo'))"
"""

from __future__ import annotations

import importlib.util
import os
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from storage.errors import InputError
from tasks.sft.config import DEFAULT_MODEL, DEFAULT_SYSTEM_PROMPT, BaseModelName, Lora
from tasks.trainers.fields import (
    ModelDtype,
    ProofTemperature,
    ProofTokens,
    RestartFromBase,
    SamplerSeed,
    evaluation_field,
)
from tasks.trainers.launch import LaunchSettings, launch_field
from tasks.trainers.time_checkpoints import checkpoint_every_minutes_field
from tasks.trainers.training_args import (
    build_training_config,
    check_by_building,
    device_capabilities,
    non_finite_value,
)
from tasks.yaml_config import yaml_float

from .algorithms import ALGORITHMS, TRL_OPTION_KEYS, canonical_algorithm, resolve_algorithm

PROOF_SYSTEM_PROMPT = (
    "You are a Lean 4 prover. Given a theorem statement, reply with the tactic proof that follows "
    "`:= by`, one tactic per line, and nothing else."
)
REWARD_NAMES = ("lean_tactic", "lean_proof", "progress", "format", "overlong")

# GRPOConfig arguments the algorithm or the rewards own (output_dir & co: tasks/trainers/training_args.py).
OWNED_TRAINING_KEYS = {
    "loss_type": "it is defined by `algorithm`",
    "scale_rewards": "it is defined by `algorithm`",
    "importance_sampling_level": "it is defined by `algorithm`",
    "reward_weights": "rewards and their weights are set in `rewards`",
    **{k: "set it in `algorithm_config`" for k in TRL_OPTION_KEYS},
}


class RewardSettings(BaseModel):
    """What the Lean-decided rewards pay (lean-grpo's presets fill these in, `reward_preset`)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)  # a NaN reward was silently 0

    finished: float = Field(
        1.0,
        description="Reward of a tactic that finishes the proof, or of a whole proof that "
        "the verdict rule says proved.",
    )
    valid_step: float = Field(
        0.1,
        description="lean_tactic: not paid: a step that changes the state without finishing the proof is no proof "
        "(issue 27); kept so configs and presets that set it load.",
    )
    goal_drop_bonus: float = Field(
        0.1,
        description="lean_tactic: not paid: a goal closed in an unfinished proof is paid only through "
        "the finished proof's verdict (issue 16); kept so configs and presets that set it load.",
    )
    error_penalty: float = Field(
        -0.1,
        le=0.0,
        description="Reward of a tactic or proof Lean rejects (≤ 0); also "
        "what a completion the guard refuses (sorry, new axiom, forbidden construct) gets.",
    )
    timeout_penalty: float = Field(
        -0.05, le=0.0, description="Reward of a tactic or proof on which the backend's own time limit ran out (≤ 0)."
    )
    partial_credit: bool = Field(
        False,
        description="lean_proof: when Lean finds an error in a proof, pay partial_step for "
        "each goal Lean reports closed before the first error (never per tactic or line).",
    )
    partial_step: float = Field(0.02, ge=0.0, description="lean_proof: partial credit per goal Lean reports closed.")
    overlong_buffer: int = Field(
        0,
        ge=0,
        description="overlong: DAPO's soft punishment starts this many tokens "
        "before max_completion_length (L_cache); 0 punishes only truncated completions.",
    )
    progress_checkpoint: str | None = Field(
        None,
        description="progress: folder of a trained progress model "
        "(tasks/progress); needed when the progress reward is used.",
    )
    workers: int = Field(8, ge=1, le=256, description="Completions checked at the same time through the backend.")


# lean-grpo's presets (docs/grpo.md): the fields each one sets.
PRESET_VALUES: dict[str, dict[str, Any]] = {
    "binary": {
        "valid_step": 0.0,
        "goal_drop_bonus": 0.0,
        "error_penalty": 0.0,
        "timeout_penalty": 0.0,
        "partial_credit": False,
    },
    "shaped": {
        "valid_step": 0.02,
        "goal_drop_bonus": 0.1,
        "error_penalty": -0.05,
        "timeout_penalty": -0.02,
        "partial_credit": True,
        "partial_step": 0.02,
    },
    "lenient": {
        "valid_step": 0.1,
        "goal_drop_bonus": 0.1,
        "error_penalty": 0.0,
        "timeout_penalty": 0.0,
        "partial_credit": True,
        "partial_step": 0.05,
    },
    "strict": {
        "valid_step": 0.0,
        "goal_drop_bonus": 0.0,
        "error_penalty": -0.1,
        "timeout_penalty": -0.1,
        "partial_credit": False,
    },
}


def backend_settings_type():
    from tasks.lean.config import BackendSettings

    return BackendSettings


class GRPOEvalSettings(BaseModel):
    """How a GRPO checkpoint is scored after training: whole-proof sampling, pass@k."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)  # a NaN reward was silently 0

    k: int = Field(4, ge=1, le=256, description="Proofs sampled per theorem; pass@k uses all of them.")
    max_theorems: int | None = Field(20, ge=1, description="Most theorems scored per (repository, split); None: all.")
    temperature: ProofTemperature = 1.0
    max_new_tokens: ProofTokens = 64
    seed: SamplerSeed = 0


class GRPOSettings(BaseModel):
    """Reinforcement learning of a tactic (or proof) generator with rewards decided by Lean."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)  # a NaN reward was silently 0

    model: BaseModelName = DEFAULT_MODEL
    init_from: Literal["self", "sft", "sft_proof"] = Field(
        "self",
        description="Starting point of step k: 'self' continues from this trainer's checkpoint of step k-1; "
        "'sft' starts from the SFT trainer's checkpoint of the same step (SFT then GRPO per repository); "
        "'sft_proof' from the whole-proof SFT trainer's (pair it with mode: proof).",
    )
    model_dtype: ModelDtype = "auto"
    restart_from_base: RestartFromBase = False
    mode: Literal["tactic", "proof"] = Field(
        "tactic",
        description="'tactic': prompt = a proof state of the training split, completion = one tactic; "
        "'proof': prompt = a theorem statement, completion = a whole tactic proof.",
    )
    algorithm: str = Field(
        "grpo",
        description="One of grpo, dr_grpo, dapo, gspo, dgpo (lean-grpo's drgrpo, DGPO "
        "accepted); `dojoflow grpo algorithms` lists them with their objectives.",
    )
    algorithm_config: dict[str, Any] = Field(
        default_factory=dict,
        description="Options of the algorithm (epsilon, epsilon_high, beta, dpo_coef, "
        "advantage_norm, ...); unknown keys are an error that lists the accepted ones.",
    )
    rewards: dict[str, float] = Field(
        default_factory=dict,
        description="Reward functions and their weights, from lean_tactic, lean_proof, "
        "progress, format, overlong. Empty: {lean_tactic: 1} in tactic mode, {lean_proof: 1} in proof mode.",
    )
    reward_preset: Literal["binary", "shaped", "lenient", "strict"] | None = Field(
        None, description="lean-grpo's reward presets; they set the `reward` fields they name (docs/grpo.md)."
    )
    reward: RewardSettings = Field(default_factory=RewardSettings, description="What each reward pays.")
    backend: dict[str, Any] = Field(
        default_factory=lambda: {"kind": "replay"},
        description="The Lean backend rewards come from (tasks/lean/config.py BackendSettings: kind repl, kimina, "
        "leandojo or replay, and its options). Default replay: traced transitions only, offline.",
    )
    system_prompt: str | None = Field(None, description="System message of every prompt; None: the mode's default.")
    max_state_tokens: int | None = Field(512, ge=8, description="Longest proof state in a prompt, in tokens.")
    max_prompts: int | None = Field(
        256,
        ge=1,
        description="Most prompts drawn from the training split per step "
        "(by a fixed hash, so reruns see the same ones); None: all.",
    )
    lora: Lora = None
    training: dict[str, Any] = Field(
        default_factory=dict,
        description="Arguments of trl.GRPOConfig (learning_rate, max_steps, num_generations, "
        "per_device_train_batch_size, max_completion_length, temperature, use_vllm, ...). Unset ones get Dojoflow's "
        "defaults for the machine (CPU: use_cpu, no bf16, no gradient checkpointing).",
    )
    checkpoint_every_minutes: float = checkpoint_every_minutes_field()
    launch: LaunchSettings | None = launch_field()
    evaluation: GRPOEvalSettings = evaluation_field(GRPOEvalSettings)

    @field_validator("algorithm")
    @classmethod
    def _known_algorithm(cls, value: str) -> str:
        try:
            return canonical_algorithm(value)
        except InputError as e:
            raise ValueError(f"{e.problem}. {e.fix.rstrip('.')}") from None  # the caller adds its own full stop

    @field_validator("rewards")
    @classmethod
    def _known_rewards(cls, value: dict[str, float]) -> dict[str, float]:
        for name in value:
            if name not in REWARD_NAMES:
                raise ValueError(f"rewards.{name} is not a reward function. Use some of {', '.join(REWARD_NAMES)}.")
        return value

    @field_validator("training")
    @classmethod
    def _check_training(cls, value: dict[str, Any]) -> dict[str, Any]:
        try:
            checked = check_training_keys(value, vllm_here=False)  # use_vllm: `_vllm_here`, which knows `launch`
        except InputError as e:
            raise ValueError(str(e)) from None
        # YAML 1.1 reads 5e-6 as a string; store the number so equal settings hash equally
        return {k: yaml_float(v) for k, v in checked.items()}

    @model_validator(mode="after")
    def _vllm_here(self):
        """use_vllm needs vLLM in this environment, unless training runs in another (`launch.python`)."""
        if self.training.get("use_vllm") and (self.launch is None or self.launch.python is None):
            try:
                check_training_keys({"use_vllm": True})
            except InputError as e:
                raise ValueError(str(e)) from None
        return self

    @field_validator("backend")
    @classmethod
    def _check_backend(cls, value: dict[str, Any]) -> dict[str, Any]:
        try:
            settings_type = backend_settings_type()
        except ImportError:  # the Lean backends are not installed with this checkout
            return value
        return settings_type.model_validate(value).model_dump(mode="json")

    @model_validator(mode="after")
    def _cross_checks(self) -> "GRPOSettings":
        try:
            resolve_algorithm(self.algorithm, self.algorithm_config)
        except InputError as e:
            raise ValueError(str(e)) from None
        if self.reward_preset:
            # a preset fills the fields the user did not write
            written = self.reward.model_fields_set
            values = {k: v for k, v in PRESET_VALUES[self.reward_preset].items() if k not in written}
            object.__setattr__(self, "reward", self.reward.model_copy(update=values))
        if self.mode == "tactic" and "lean_proof" in self.rewards:
            raise ValueError("rewards.lean_proof checks whole proofs: use it with mode 'proof' (or lean_tactic).")
        if self.mode == "proof" and ("lean_tactic" in self.rewards or "progress" in self.rewards):
            raise ValueError("rewards.lean_tactic and rewards.progress score one tactic: use them with mode 'tactic'.")
        if "progress" in self.rewards and not self.reward.progress_checkpoint:
            raise ValueError(
                "rewards.progress needs reward.progress_checkpoint, the folder of a trained progress model."
            )
        return self

    # -- derived -----------------------------------------------------------------------
    @property
    def starts_from(self) -> str | None:
        """The trainer whose checkpoint of the same step this one starts from (tasks/trainers/base.py)."""
        return None if self.init_from == "self" else self.init_from

    def reward_weights(self) -> dict[str, float]:
        if self.rewards:
            return dict(self.rewards)
        return {"lean_tactic": 1.0} if self.mode == "tactic" else {"lean_proof": 1.0}

    def prompt(self) -> str:
        if self.system_prompt is not None:
            return self.system_prompt
        return DEFAULT_SYSTEM_PROMPT if self.mode == "tactic" else PROOF_SYSTEM_PROMPT

    def resolved_algorithm(self):
        return resolve_algorithm(self.algorithm, self.algorithm_config)


# -- GRPOConfig arguments --------------------------------------------------------------


# Dojoflow's GRPOConfig values under the user's `training` (machine-independent part).
GRPO_DEFAULTS: dict[str, Any] = {
    "report_to": "none",
    "num_train_epochs": 1,
    "per_device_train_batch_size": 4,
    "num_generations": 4,
    "max_completion_length": 32,
    "learning_rate": 1e-5,
    "logging_steps": 1,
    "save_strategy": "steps",
    "save_steps": 50,
    "save_total_limit": 2,
    "disable_tqdm": True,
}


def default_training_args(user: dict[str, Any], cuda: bool, bf16_ok: bool) -> dict[str, Any]:
    """Dojoflow's defaults for the GRPOConfig arguments the user left unset, on this machine.
    GRPOConfig defaults to bf16 and gradient checkpointing, which fail or only slow down on CPU."""
    machine = (
        {"bf16": bf16_ok, "fp16": False}
        if cuda
        else {"use_cpu": True, "bf16": False, "fp16": False, "gradient_checkpointing": False}
    )
    return {k: v for k, v in {**GRPO_DEFAULTS, **machine}.items() if k not in user}


def vllm_problem() -> str | None:
    """Why use_vllm cannot work on this machine, or None."""
    if importlib.util.find_spec("vllm") is None:
        return "vllm is not installed (the transformers pin excludes every vLLM build; see docs/grpo.md)"
    if not device_capabilities()[0]:
        return "this machine has no CUDA GPU, which vLLM needs"
    return None


def check_training_keys(training: dict[str, Any], field: str = "training", vllm_here: bool = True) -> dict[str, Any]:
    """The GRPO-specific checks of `training` that need no torch: keys the algorithm or
    Dojoflow owns, num_generations against the generation batch, use_vllm on this machine.
    (Names and types against GRPOConfig: `tasks.trainers.training_args`, at preflight.)"""
    for key, why in OWNED_TRAINING_KEYS.items():
        if key in training:
            raise InputError(f"{field}.{key}", f"cannot be set: {why}", f"remove {key} from {field}")
    bad = non_finite_value(training)
    if bad is not None:
        raise InputError(f"{field}.{bad[0]}", f"{training[bad[0]]!r} {bad[1]}", f"fix {field}.{bad[0]}")
    merged = {**default_training_args(training, False, False), **training}
    n = merged.get("num_generations")
    if isinstance(n, int) and n < 2:
        raise InputError(
            f"{field}.num_generations",
            f"{n}: GRPO compares completions within a group, so it needs at least 2",
            "set num_generations to 2 or more",
        )
    per_device = merged.get("per_device_train_batch_size")
    steps = merged.get("steps_per_generation") or merged.get("gradient_accumulation_steps", 1)
    batch = merged.get("generation_batch_size") or (
        per_device * steps if isinstance(per_device, int) and isinstance(steps, int) else None
    )
    if isinstance(n, int) and isinstance(batch, int) and batch % n:
        raise InputError(
            f"{field}.num_generations",
            f"{n} does not divide the generation batch ({batch} = "
            "per_device_train_batch_size × steps_per_generation, or generation_batch_size)",
            f"make per_device_train_batch_size a multiple of {n}, or change num_generations",
        )
    if training.get("use_vllm") and vllm_here:  # not here: in launch.python's environment (preflight)
        problem = vllm_problem()
        if problem:
            raise InputError(
                f"{field}.use_vllm",
                f"true but {problem}",
                "set use_vllm to false (generation then "
                "uses transformers), or run on a GPU machine with the vLLM environment of docs/grpo.md",
            )
    return training


def preflight(settings: GRPOSettings, field: str) -> None:
    """Before a run: `training` against trl.GRPOConfig (the shared check) and this machine."""
    from tasks.trainers.launch import launch_of

    processes = launch_of(settings).world_size()
    if processes > 1 and settings.resolved_algorithm().dynamic_sampling:
        raise InputError(
            f"{field}.algorithm_config.dynamic_sampling",
            f"is on but the launch asks for {processes} processes: each rank would drop and refill its own "
            "groups, and a refill's generation gathers across ranks (tasks/grpo/lean_trainer.py)",
            "train DAPO's dynamic sampling in one process (launch.processes: 1), or set dynamic_sampling: false",
        )
    if settings.training.get("use_vllm") and launch_of(settings).python is not None:
        # vLLM lives in the training environment (launch.python), where it is looked for
        # (tasks/trainers/preflight.py: check_launch_settings), not in this one.
        rest = {k: v for k, v in settings.training.items() if k != "use_vllm"}
        settings = settings.model_copy(update={"training": rest})
    check_by_building(build_grpo_config, settings, field)


def build_grpo_config(
    settings: GRPOSettings,
    output_dir: str | os.PathLike,
    *,
    cuda: bool | None = None,
    bf16_ok: bool | None = None,
    field: str = "training",
):
    """The `trl.GRPOConfig` for a training step on this machine: Dojoflow's defaults, the user's
    `training` (checked by `tasks.trainers.training_args`), the algorithm's settings, the reward weights."""
    check_training_keys(dict(settings.training), field)
    fixed = {**settings.resolved_algorithm().trl, "reward_weights": list(settings.reward_weights().values())}
    return build_training_config(
        "trl:GRPOConfig",
        settings,
        output_dir,
        lambda cuda, bf16_ok: default_training_args(settings.training, cuda, bf16_ok),
        cuda=cuda,
        bf16_ok=bf16_ok,
        field=field,
        fixed=fixed,
    )


__all__ = [
    "ALGORITHMS",
    "GRPOSettings",
    "GRPOEvalSettings",
    "RewardSettings",
    "build_grpo_config",
    "check_training_keys",
    "preflight",
    "PRESET_VALUES",
    "REWARD_NAMES",
]
