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

import logging
import time
from pathlib import Path

from storage.snapshot_ref import SnapshotRef
from tasks.models.loading import latest_trainer_checkpoint
from tasks.trainers import lifecycle as step
from tasks.trainers.base import SkipTraining

from .config import SFTSettings, build_sft_config
from .data import build_examples, read_tactics

log = logging.getLogger(__name__)


def _examples(table, settings: SFTSettings, tokenizer, where: str):
    """The chat examples of `table`; SkipTraining when every tactic is sorry/admit or empty."""
    examples = build_examples(
        table, settings.system_prompt, tokenizer=tokenizer, max_state_tokens=settings.max_state_tokens
    )
    if len(examples) == 0:
        raise SkipTraining(f"all {table.num_rows} tactics of {where} are sorry/admit or empty")
    return examples


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
    settings = step.coerce_settings(settings, SFTSettings)
    started = time.monotonic()
    out_dir, work_dir, parent = step.step_dirs(out_dir, work_dir, parent_dir)

    table = _train_tactics(snapshot, split_kind)
    start = step.causal_lm_start(settings, parent, step.model_cache(model_cache_dir))
    examples = _examples(
        table, settings, start.tokenizer, f"the {split_kind}/train split of snapshot {snapshot.snapshot_id}"
    )

    trainer_dir = work_dir / step.TRAINER_SUBDIR
    args = build_sft_config(settings, trainer_dir)
    resume = latest_trainer_checkpoint(trainer_dir)
    log.info(
        "SFT on %d examples (%s/train of %s), from %s, %s, resume=%s",
        *(len(examples), split_kind, snapshot.snapshot_id, start.started_from, start.kind, resume),
    )
    trainer = step.sft_trainer(start, args, examples.to_dataset(), settings, callbacks)
    trained = step.train_or_reload(trainer, resume)
    figures = _figures(trained, examples, table.num_rows, start, started)
    step.publish_started(
        trainer,
        start,
        out_dir,
        settings,
        config_file="sft_config.json",
        trainer="sft",
        **step.provenance(settings, snapshot, split_kind, parent),
        figures=figures,
    )
    return figures


def _train_tactics(snapshot: SnapshotRef, split_kind: str):
    """The tactics of the snapshot's train split; `SkipTraining` when there are none."""
    table = read_tactics(snapshot, split_kind, "train")
    if table.num_rows == 0:
        raise SkipTraining(
            f"snapshot {snapshot.snapshot_id} has no tactics in its {split_kind}/train split "
            f"(repositories: {', '.join(snapshot.repo_ids) or 'none'})"
        )
    return table


def _figures(trained, examples, rows: int, start, started: float) -> dict:
    """The step's figures (JSON): loss, steps, examples and how the step started."""
    return {
        "train_loss": trained.train_loss,
        "steps": trained.steps,
        "epochs": trained.epochs,
        "examples": len(examples),
        "rows": rows,
        "skipped_sorry": examples.skipped_sorry,
        "skipped_empty": examples.skipped_empty,
        "seconds": round(time.monotonic() - started, 3),
        "mode": start.kind,
        "started_from": start.started_from,
        "resumed_from": trained.resumed_from,
    }
