"""What every Trainer-based trainer does around its training loop, in one place: settings
coercion, the starting point, resume after a crash, and publishing the result.

SFT, GRPO and the progress model share these so that they cannot drift apart:

- `coerce_settings`: a trainer's `train`/`evaluate` receive its pydantic settings or, from
  a JSON round trip (a Prefect parameter, a manifest), their dict; validated once, here.
- `starts_from_parent`: the one rule for "continue from the parent checkpoint" (a parent
  exists and `restart_from_base` is off); `causal_lm_start` loads the tactic generators'
  starting point (base, parent, LoRA adapter; table in tasks/sft/train.py).
- `train_or_reload`: resume from the latest complete Trainer checkpoint in the step's work
  folder; a checkpoint saved at the very end is reloaded, not resumed (docs/resume.md).
- `publish`: the weights (or the adapter), the tokenizer, the resolved Trainer config and
  the model card (`dojoflow_model.json`), written on the main process only;
  `publish_started` does it for a tactic generator's `Start`.
- `step_dirs`, `hf_callbacks`, `sft_trainer`: a step's folders as paths, the callbacks every
  Trainer gets (timed checkpoints, progress records), TRL's SFTTrainer over a `Start`.

Importing this module imports no torch.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from storage import atomic
from storage.errors import InputError

log = logging.getLogger(__name__)

TRAINER_SUBDIR = "trainer"  # Trainer checkpoints live in <work_dir>/trainer, where a rerun resumes

S = TypeVar("S", bound=BaseModel)


def coerce_settings(settings: S | dict, model: type[S]) -> S:
    """`settings` as the trainer's settings model (a dict, e.g. after a JSON round trip, is validated)."""
    return settings if isinstance(settings, model) else model.model_validate(settings)


def model_cache(model_cache_dir: Path | None) -> Path:
    """Where builtin base models are built: the caller's folder, else `<DOJOFLOW_HOME>/models`."""
    from tasks.models.loading import default_model_cache

    return Path(model_cache_dir) if model_cache_dir is not None else default_model_cache()


def step_dirs(out_dir, work_dir, parent_dir) -> tuple[Path, Path, Path | None]:
    """A step's output, work and parent folders as paths (the parent may be None)."""
    return Path(out_dir), Path(work_dir), Path(parent_dir) if parent_dir is not None else None


def hf_callbacks(settings, callbacks: list | None, *own) -> list:
    """The callbacks of a transformers Trainer: the caller's, a resumable checkpoint every
    `settings.checkpoint_every_minutes`, the trainer's `own`, and the progress records."""
    from .log_progress import log_training_progress
    from .time_checkpoints import save_every_minutes

    return [*(callbacks or []), save_every_minutes(settings.checkpoint_every_minutes), *own, log_training_progress()]


def starts_from_parent(settings, parent_dir: Path | None) -> bool:
    """Whether a step continues from its parent checkpoint: there is one and `restart_from_base` is off."""
    return parent_dir is not None and not getattr(settings, "restart_from_base", False)


# -- the starting point of a tactic generator (SFT, GRPO) ----------------------------------------------
@dataclass
class Start:
    """The model a step trains, and how it got there (recorded in the figures and the model card)."""

    model: Any
    tokenizer: Any
    peft_config: Any  # a new LoRA adapter to add, or None
    kind: str  # "full" or "lora": what the step publishes
    base_model: str | None  # an adapter's base, as the model card records it
    started_from: str  # "base" or "parent"


def _check_adapter_matches(parent: Path, settings) -> None:
    cfg = json.loads((parent / "adapter_config.json").read_text())
    lora = settings.lora
    theirs = {"r": cfg.get("r"), "alpha": float(cfg.get("lora_alpha", 0))}
    ours = {"r": lora.r, "alpha": float(lora.alpha)}
    if theirs != ours:
        raise InputError(
            f"{type(settings).__name__}.lora",
            f"the parent checkpoint {parent} is an adapter with r={theirs['r']}, alpha={theirs['alpha']}, "
            f"but the settings ask for r={ours['r']}, alpha={ours['alpha']}, so it cannot be trained further",
            "Set lora.r and lora.alpha to the parent's values, or set restart_from_base to true to start a "
            "new adapter on the base model.",
        )


def causal_lm_start(settings, parent_dir: Path | None, cache: Path) -> Start:
    """Load the causal LM a step trains (settings with `model`, `model_dtype`, `lora`,
    `restart_from_base`); say where it came from and what to publish."""
    from tasks.models.loading import adapter_base, is_adapter_dir, load_causal_lm

    dtype, lora = settings.model_dtype, settings.lora
    new_adapter = lora.to_peft() if lora else None
    kind = "lora" if lora else "full"
    if not starts_from_parent(settings, parent_dir):
        model, tokenizer = load_causal_lm(settings.model, cache, dtype=dtype)
        return Start(model, tokenizer, new_adapter, kind, settings.model if lora else None, "base")
    parent = Path(parent_dir)
    if not parent.is_dir():
        raise InputError(parent, "the parent checkpoint folder does not exist", "Rebuild the parent step first.")
    if is_adapter_dir(parent):
        if lora is None:  # its adapter merged into its base, all weights trained
            model, tokenizer = load_causal_lm(parent, cache, merge_adapter=True, dtype=dtype)
            return Start(model, tokenizer, None, "full", None, "parent")
        _check_adapter_matches(parent, settings)
        model, tokenizer = load_causal_lm(parent, cache, trainable=True, dtype=dtype)
        return Start(model, tokenizer, None, "lora", adapter_base(parent), "parent")
    model, tokenizer = load_causal_lm(parent, cache, dtype=dtype)
    return Start(model, tokenizer, new_adapter, kind, str(parent.resolve()) if lora else None, "parent")


def sft_trainer(start: Start, args, dataset, settings, callbacks: list | None):
    """TRL's SFTTrainer training `start`'s model (and new adapter, if any) on `dataset`."""
    from trl import SFTTrainer

    return SFTTrainer(
        model=start.model,
        args=args,
        train_dataset=dataset,
        processing_class=start.tokenizer,
        peft_config=start.peft_config,
        callbacks=hf_callbacks(settings, callbacks),
    )


# -- resume ---------------------------------------------------------------------------------------------
def finished_state(checkpoint: Path | None, target_steps: int | None = None) -> dict | None:
    """The trainer state of `checkpoint` if it was saved at the end of training, else None.

    Resuming from such a checkpoint would make transformers run one step past the end,
    so a finished run is reloaded instead of resumed. With `target_steps` (this run's
    `max_steps`), the end is this run's: a checkpoint of a shorter run is resumed and
    trained on to the new end.
    """
    if checkpoint is None:
        return None
    state = json.loads((checkpoint / "trainer_state.json").read_text())
    step = state.get("global_step", 0)
    if target_steps is not None and target_steps > 0:
        return state if step >= target_steps else None
    control = state.get("stateful_callbacks", {}).get("TrainerControl", {}).get("args", {})
    max_steps = state.get("max_steps") or 0
    if control.get("should_training_stop") or (max_steps > 0 and step >= max_steps):
        return state
    return None


@dataclass
class Trained:
    """What a training loop left: its figures and TRL's log (for per-step histories)."""

    train_loss: float | None
    steps: int
    epochs: float
    resumed_from: str | None
    log_history: list[dict] = field(default_factory=list)


def _finite(x) -> float | None:
    import math

    return float(x) if x is not None and math.isfinite(x) else None


def train_or_reload(trainer, resume: Path | None) -> Trained:
    """Train `trainer` (a transformers Trainer), resuming from `resume`, the latest complete
    checkpoint in the work folder; a checkpoint saved at the end is reloaded as it is."""
    finished = finished_state(resume, getattr(trainer.args, "max_steps", None))
    if finished is None:
        result = trainer.train(resume_from_checkpoint=str(resume) if resume else None)
        state = trainer.state
        return Trained(
            _finite(result.training_loss),
            int(state.global_step),
            float(state.epoch or 0.0),
            resume.name if resume else None,
            list(state.log_history),
        )
    # Trained to the end before a crash in saving: take those weights as they are.
    trainer._load_from_checkpoint(str(resume))
    history = finished.get("log_history", [])
    losses = [e["loss"] for e in history if "loss" in e]
    return Trained(
        _finite(sum(losses) / len(losses)) if losses else None,
        int(finished["global_step"]),
        float(finished.get("epoch") or 0.0),
        resume.name,
        list(history),
    )


# -- publish --------------------------------------------------------------------------------------------
def publish(
    hf_trainer,
    tokenizer,
    out_dir: Path,
    /,
    *,
    kind: str,
    base_model: str | None,
    config_file: str | None = None,
    **card: Any,
) -> bool:
    """Write the model `hf_trainer` (a transformers Trainer) trained, or its adapter, its
    tokenizer, the resolved Trainer config (`config_file`, when given) and the model card
    (`card`: trainer name, settings, figures, provenance) into `out_dir`. Only the main process writes (torchrun-safe); returns
    whether this one did."""
    from tasks.models.loading import write_model_info

    if not hf_trainer.is_world_process_zero():
        return False
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    hf_trainer.accelerator.unwrap_model(hf_trainer.model).save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    if config_file is not None:
        atomic.write_text(out_dir / config_file, hf_trainer.args.to_json_string())
    write_model_info(out_dir, kind, base_model, **card)
    return True


def provenance(settings, snapshot, split_kind: str, parent_dir: Path | None) -> dict[str, Any]:
    """The model card's provenance of a curriculum step: snapshot, split kind, and the parent
    it continued from (None when it started from the base)."""
    parent = str(parent_dir) if starts_from_parent(settings, parent_dir) else None
    return {"snapshot_id": snapshot.snapshot_id, "split_kind": split_kind, "parent_dir": parent}


def publish_started(
    hf_trainer, start: Start, out_dir: Path, settings, /, *, config_file: str, trainer: str, **card: Any
) -> bool:
    """`publish` for a tactic generator that started from `start` (its kind, base model and
    tokenizer), with the trainer's name and settings in the model card."""
    card = {"trainer": trainer, "settings": settings.model_dump(mode="json"), **card}
    kind, base = start.kind, start.base_model
    return publish(hf_trainer, start.tokenizer, out_dir, kind=kind, base_model=base, config_file=config_file, **card)
