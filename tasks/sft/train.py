"""One curriculum step of SFT: train the tactic generator on a snapshot's train split.

`train_sft` implements `tasks.trainers.base.TrainFn`. It starts from the parent
checkpoint (the previous step's model) or, for the first step or with
`restart_from_base`, from the base model in the settings; trains with TRL's
SFTTrainer on chat examples (`data.py`) with completion-only loss; keeps Trainer
checkpoints in `work_dir` and resumes from the latest one after a crash; and writes
the model (or the LoRA adapter) and its tokenizer into `out_dir`.

Starting points, by (parent checkpoint, settings.lora):

    no parent / restart  + no lora : base model, all weights trained
    no parent / restart  + lora    : base model + a new adapter
    full model           + no lora : the parent's weights, all trained
    full model           + lora    : a new adapter on top of the parent (its base)
    adapter              + lora    : the parent's adapter, trained further (same r, alpha)
    adapter              + no lora : the parent's adapter merged into its base, all trained

Besides the `save_pretrained` files, `out_dir` holds `dojoflow_model.json` (kind, base
model as configured, settings, figures) and `sft_config.json` (the resolved
`trl.SFTConfig`), so a checkpoint says how it was made.

    python -c "help('tasks.sft.train')"
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

from storage import atomic
from storage.errors import InputError
from storage.snapshot_ref import SnapshotRef
from tasks.models.loading import (
    adapter_base,
    default_model_cache,
    is_adapter_dir,
    latest_trainer_checkpoint,
    load_causal_lm,
    write_model_info,
)
from tasks.trainers.base import SkipTraining
from tasks.trainers.log_progress import log_training_progress
from tasks.trainers.time_checkpoints import save_every_minutes

from .config import SFTSettings, build_sft_config
from .data import build_examples, read_tactics

log = logging.getLogger(__name__)

TRAINER_SUBDIR = "trainer"


def _finished_state(checkpoint: Path | None) -> dict | None:
    """The trainer state of `checkpoint` if it was saved at the end of training, else None.

    Resuming from such a checkpoint would make transformers run one step past the end,
    so a finished run is reloaded instead of resumed.
    """
    if checkpoint is None:
        return None
    state = json.loads((checkpoint / "trainer_state.json").read_text())
    control = state.get("stateful_callbacks", {}).get("TrainerControl", {}).get("args", {})
    max_steps = state.get("max_steps") or 0
    if control.get("should_training_stop") or (max_steps > 0 and state.get("global_step", 0) >= max_steps):
        return state
    return None


def _as_settings(settings: SFTSettings | dict) -> SFTSettings:
    return settings if isinstance(settings, SFTSettings) else SFTSettings.model_validate(settings)


def _check_adapter_matches(parent: Path, settings: SFTSettings) -> None:
    cfg = json.loads((parent / "adapter_config.json").read_text())
    lora = settings.lora
    assert lora is not None
    theirs = {"r": cfg.get("r"), "alpha": float(cfg.get("lora_alpha", 0))}
    ours = {"r": lora.r, "alpha": float(lora.alpha)}
    if theirs != ours:
        raise InputError(
            "SFTSettings.lora",
            f"the parent checkpoint {parent} is an adapter with r={theirs['r']}, alpha={theirs['alpha']}, "
            f"but the settings ask for r={ours['r']}, alpha={ours['alpha']}, so it cannot be trained further",
            "Set lora.r and lora.alpha to the parent's values, or set restart_from_base to true to start a "
            "new adapter on the base model.",
        )


def _starting_point(settings: SFTSettings, parent_dir: Path | None, cache: Path) -> dict[str, Any]:
    """Load the model to train; say where it came from and what to save."""
    dtype = settings.model_dtype
    if parent_dir is None or settings.restart_from_base:
        model, tokenizer = load_causal_lm(settings.model, cache, dtype=dtype)
        return {
            "model": model,
            "tokenizer": tokenizer,
            "peft_config": settings.lora.to_peft() if settings.lora else None,
            "kind": "lora" if settings.lora else "full",
            "base_model": settings.model if settings.lora else None,
            "started_from": "base",
        }
    parent = Path(parent_dir)
    if not parent.is_dir():
        raise InputError(parent, "the parent checkpoint folder does not exist", "Rebuild the parent step first.")
    if is_adapter_dir(parent):
        if settings.lora is None:
            model, tokenizer = load_causal_lm(parent, cache, merge_adapter=True, dtype=dtype)
            return {
                "model": model,
                "tokenizer": tokenizer,
                "peft_config": None,
                "kind": "full",
                "base_model": None,
                "started_from": "parent",  # its adapter merged into its base
            }
        _check_adapter_matches(parent, settings)
        model, tokenizer = load_causal_lm(parent, cache, trainable=True, dtype=dtype)
        return {
            "model": model,
            "tokenizer": tokenizer,
            "peft_config": None,
            "kind": "lora",
            "base_model": adapter_base(parent),
            "started_from": "parent",
        }
    model, tokenizer = load_causal_lm(parent, cache, dtype=dtype)
    return {
        "model": model,
        "tokenizer": tokenizer,
        "peft_config": settings.lora.to_peft() if settings.lora else None,
        "kind": "lora" if settings.lora else "full",
        "base_model": str(parent.resolve()) if settings.lora else None,
        "started_from": "parent",
    }


def train_sft(
    settings: SFTSettings | dict,
    snapshot: SnapshotRef,
    split_kind: str,
    parent_dir: Path | None,
    out_dir: Path,
    work_dir: Path,
    *,
    model_cache_dir: Path | None = None,
    callbacks: list | None = None,
) -> dict:
    """Train on `snapshot.tactics(split_kind, "train")`; write the model into `out_dir`.

    `model_cache_dir` is where builtin base models are built (default
    `<DOJOFLOW_HOME>/models`). `callbacks` are `transformers.TrainerCallback`s (progress
    reporting). Returns JSON-serialisable figures: train_loss, steps, examples, seconds
    and how the step started. Raises `SkipTraining` when the split has nothing to learn.
    """
    from trl import SFTTrainer

    settings = _as_settings(settings)
    started = time.monotonic()
    out_dir, work_dir = Path(out_dir), Path(work_dir)
    cache = Path(model_cache_dir) if model_cache_dir is not None else default_model_cache()

    table = read_tactics(snapshot, split_kind, "train")
    if table.num_rows == 0:
        raise SkipTraining(
            f"snapshot {snapshot.snapshot_id} has no tactics in its {split_kind}/train split "
            f"(repositories: {', '.join(snapshot.repo_ids) or 'none'})"
        )

    start = _starting_point(settings, Path(parent_dir) if parent_dir is not None else None, cache)
    model, tokenizer = start["model"], start["tokenizer"]
    examples = build_examples(
        table, settings.system_prompt, tokenizer=tokenizer, max_state_tokens=settings.max_state_tokens
    )
    if len(examples) == 0:
        raise SkipTraining(
            f"all {table.num_rows} tactics of the {split_kind}/train split of snapshot "
            f"{snapshot.snapshot_id} are sorry/admit or empty"
        )

    trainer_dir = work_dir / TRAINER_SUBDIR
    args = build_sft_config(settings, trainer_dir)
    resume = latest_trainer_checkpoint(trainer_dir)
    log.info(
        "SFT on %d examples (%s/train of %s), from %s, %s, resume=%s",
        len(examples),
        split_kind,
        snapshot.snapshot_id,
        start["started_from"],
        start["kind"],
        resume,
    )
    trainer = SFTTrainer(
        model=model,
        args=args,
        train_dataset=examples.to_dataset(),
        processing_class=tokenizer,
        peft_config=start["peft_config"],
        callbacks=[*(callbacks or []), save_every_minutes(settings.checkpoint_every_minutes), log_training_progress()],
    )
    finished = _finished_state(resume)
    if finished is None:
        result = trainer.train(resume_from_checkpoint=str(resume) if resume else None)
        train_loss = float(result.training_loss)
    else:
        # Trained to the end before a crash in saving: take those weights as they are.
        trainer._load_from_checkpoint(str(resume))
        losses = [e["loss"] for e in finished.get("log_history", []) if "loss" in e]
        train_loss = float(sum(losses) / len(losses)) if losses else None

    trained = trainer.accelerator.unwrap_model(trainer.model)
    out_dir.mkdir(parents=True, exist_ok=True)
    trained.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    atomic.write_text(out_dir / "sft_config.json", args.to_json_string())

    figures = {
        "train_loss": train_loss,
        "steps": int(finished["global_step"] if finished else trainer.state.global_step),
        "epochs": float((finished["epoch"] if finished else trainer.state.epoch) or 0.0),
        "examples": len(examples),
        "rows": table.num_rows,
        "skipped_sorry": examples.skipped_sorry,
        "skipped_empty": examples.skipped_empty,
        "seconds": round(time.monotonic() - started, 3),
        "mode": start["kind"],
        "started_from": start["started_from"],
        "resumed_from": resume.name if resume else None,
    }
    write_model_info(
        out_dir,
        start["kind"],
        start["base_model"],
        trainer="sft",
        settings=settings.model_dump(mode="json"),
        snapshot_id=snapshot.snapshot_id,
        split_kind=split_kind,
        parent_dir=str(parent_dir) if parent_dir is not None and not settings.restart_from_base else None,
        figures=figures,
    )
    return figures
