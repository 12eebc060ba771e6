"""`train_progress`: one curriculum step of the proof-progress model.

Trains `AutoModelForSequenceClassification(num_labels=1, problem_type="regression")`
with `transformers.Trainer` (MSE loss) on the progress rows of a snapshot's train
split (see `tasks.progress.data`), starting from the previous step's checkpoint
(`parent_dir`) or, at the first step or with `restart_from_base`, from the base
encoder named in the settings. Implements `train` of `tasks/trainers/base.py`.

The rows of the datasets in `settings.extra_datasets` (imported with `dojoflow
import-progress`, `tasks.progress.imported`) are added to the train rows. With a
parent, `settings.model` must name the parent's architecture and hidden size
(`check_parent_model`; `ModelMismatchError` otherwise), since the parent's weights,
not `model`, are what training continues from.

Trainer checkpoints go to `work_dir/trainer`; a rerun after a crash resumes from
the last complete one. The result in `out_dir` is the model, its tokenizer and
`dojoflow_model.json` (the model card every trainer writes: settings, input
template, target convention, provenance).

    from tasks.progress.config import ProgressSettings
    from tasks.progress.train import train_progress
    train_progress(ProgressSettings(training={"num_train_epochs": 1}), snapshot, "random",
                   None, Path("out"), Path("work"))
"""

from __future__ import annotations

import logging
from pathlib import Path

from storage.errors import InputError
from tasks.models.loading import latest_trainer_checkpoint, load_tokenizer
from tasks.trainers.base import SkipTraining
from tasks.trainers.lifecycle import (
    TRAINER_SUBDIR,
    coerce_settings,
    hf_callbacks,
    publish,
    starts_from_parent,
    step_dirs,
    train_or_reload,
)

from .config import ProgressSettings, training_arguments
from .data import INPUT_TEMPLATE, TARGET_CONVENTION, ProgressExample, progress_examples
from .errors import ModelMismatchError
from .imported import extra_examples
from .model import (
    META_FORMAT_VERSION,
    encode_rows,
    features,
    load_regression_model,
    read_meta,
    resolve_base_model,
)

log = logging.getLogger(__name__)


def check_parent_model(settings: ProgressSettings, parent_dir: Path, cache_dir: Path) -> dict:
    """Check that `settings.model` can continue from the progress checkpoint `parent_dir`.

    Training continues from the parent's weights; `settings.model` names the curriculum's
    base. The same model (by name, aliases resolved) passes; another one passes if it has
    the parent's architecture and hidden size (e.g. another copy of the same model), which
    is recorded; otherwise `ModelMismatchError`. A model whose config cannot be read here
    (a hub id offline) is not checked, with a warning, and that is recorded too
    (`tasks.trainers.parent`). Returns the record (also saved in the step's figures).
    """
    from tasks.models.loading import architecture_of
    from tasks.trainers.parent import COMPARED, configured_architecture

    meta = read_meta(parent_dir)  # refuses a folder that is not a progress checkpoint
    parent_model = (meta.get("settings") or {}).get("model")
    try:
        parent_arch = architecture_of(parent_dir)
    except (OSError, ValueError) as e:
        raise InputError(parent_dir, f"its config.json cannot be read ({e})", "Retrain the parent step.") from e
    record = {
        "model": settings.model,
        "parent_model": parent_model,
        "parent_architecture": list(parent_arch),
        "used": "parent weights",
    }
    arch, status = configured_architecture(settings.model, parent_model, parent_dir, cache_dir)
    if status != COMPARED:
        return {**record, "status": status}
    if arch != parent_arch:
        raise ModelMismatchError(settings.model, arch, parent_dir, parent_arch)
    log.info(
        "model %r differs from the parent's %r but has its architecture %s; continuing from the parent",
        settings.model,
        parent_model,
        parent_arch,
    )
    return {**record, "status": "another model of the parent's architecture and hidden size"}


def _dataset(tokenizer, examples: list[ProgressExample], max_len: int) -> tuple[list[dict], int]:
    ids, truncated = encode_rows(tokenizer, [(e.goal, e.prefix, e.tactic) for e in examples], max_len)
    rows = [{**features(x), "labels": float(e.steps_remaining)} for x, e in zip(ids, examples)]
    return rows, truncated


def _regression_metrics(eval_pred) -> dict:
    import numpy as np

    preds, labels = eval_pred
    preds = np.asarray(preds).reshape(-1)
    labels = np.asarray(labels).reshape(-1)
    return {"mse": float(((preds - labels) ** 2).mean()), "mae": float(np.abs(preds - labels).mean())}


def _val_examples_and_args(settings: ProgressSettings, snapshot, split_kind: str, trainer_dir: Path):
    """The TrainingArguments and, when they evaluate during training, the val rows (none: no evaluation)."""
    args = training_arguments(settings, trainer_dir)
    if args.eval_strategy == "no":
        return [], args
    val_examples = progress_examples(snapshot, split_kind, "val").examples
    if settings.max_eval_examples is not None:
        from .evaluate import sample_examples

        val_examples = sample_examples(val_examples, settings.max_eval_examples)
    if not val_examples:
        log.warning(
            "eval_strategy=%s but the val split has no progress rows: training without evaluation",
            getattr(args.eval_strategy, "value", args.eval_strategy),
        )
        args = training_arguments(settings, trainer_dir, eval_strategy="no", load_best_model_at_end=False)
    return val_examples, args


def _load_start(settings: ProgressSettings, source: str, from_base: bool):
    """The tokenizer and regression model to train, from the parent or the base encoder."""
    try:
        tokenizer = load_tokenizer(source)
        model = load_regression_model(source, tokenizer, from_base=from_base)
    except OSError as e:
        if not from_base:
            raise
        raise InputError(
            settings.model,
            f"the base model could not be loaded ({e})",
            "Name a local save_pretrained folder or a builtin: model, or allow hub downloads "
            "(unset HF_HUB_OFFLINE) for a hub id.",
            where="model",
        ) from e
    positions = getattr(model.config, "max_position_embeddings", None)
    if positions is not None and positions < settings.max_seq_len:
        raise InputError(
            "progress settings",
            f"max_seq_len={settings.max_seq_len} exceeds the model's {positions} positions",
            f"Set max_seq_len to at most {positions}.",
            where="max_seq_len",
        )
    return tokenizer, model


def _model_card(settings: ProgressSettings, snapshot, split_kind: str, figures: dict) -> dict:
    """What a progress checkpoint's `dojoflow_model.json` records besides kind and base model."""
    import torch
    import transformers

    return {
        "trainer": "progress",
        "format_version": META_FORMAT_VERSION,
        "settings": settings.model_dump(mode="json"),
        "max_seq_len": settings.max_seq_len,
        "input_template": INPUT_TEMPLATE,
        "target": TARGET_CONVENTION,
        "snapshot_id": snapshot.snapshot_id,
        "split_kind": split_kind,
        "repo_ids": list(snapshot.repo_ids),
        "training": figures,
        "versions": {"transformers": transformers.__version__, "torch": torch.__version__},
    }


def _train_examples(settings: ProgressSettings, snapshot, split_kind: str):
    """(the snapshot's progress rows, every training example with the imported ones, the imported
    counts); `SkipTraining` when there are none."""
    rows = progress_examples(snapshot, split_kind, "train")
    extra, extra_counts = extra_examples(snapshot.store_root, settings.extra_datasets)
    train_examples = rows.examples + extra
    if not train_examples:
        raise SkipTraining(
            f"no progress rows in {split_kind}/train of snapshot {snapshot.snapshot_id} "
            f"(repositories {list(snapshot.repo_ids)}; {rows.excluded_sorry} proofs with sorry left out)"
        )
    return rows, train_examples, extra_counts


def _trainer(settings: ProgressSettings, model, tokenizer, args, train_examples, val_examples):
    """transformers' Trainer over the tokenised examples; (trainer, how many inputs were truncated)."""
    from transformers import DataCollatorWithPadding, Trainer

    train_ds, truncated = _dataset(tokenizer, train_examples, settings.max_seq_len)
    eval_ds = _dataset(tokenizer, val_examples, settings.max_seq_len)[0] if val_examples else None
    trainer = Trainer(
        model=model,
        args=args,
        train_dataset=train_ds,
        eval_dataset=eval_ds,
        processing_class=tokenizer,
        data_collator=DataCollatorWithPadding(tokenizer),
        compute_metrics=_regression_metrics if eval_ds is not None else None,
        callbacks=hf_callbacks(settings, None),
    )
    return trainer, truncated


def _data_figures(rows) -> dict:
    return {
        "proofs": rows.proofs,
        "excluded_sorry_proofs": rows.excluded_sorry,
        "examples_per_repo": rows.per_repo,
    }


def _trained_figures(trained) -> dict:
    return {
        "resumed_from": trained.resumed_from,
        "global_step": trained.steps,
        "epochs": trained.epochs,
        "train_loss": trained.train_loss,
    }


def train_progress(
    settings: ProgressSettings,
    snapshot,
    split_kind: str,
    parent_dir: Path | None,
    out_dir: Path,
    work_dir: Path,
    *,
    model_cache_dir: Path | None = None,
) -> dict:
    """Train one step; write the checkpoint into `out_dir`; return training figures.

    Raises `SkipTraining` when the train split gives no progress rows (no traced
    proofs, or only proofs with sorry).
    """
    import transformers

    settings = coerce_settings(settings, ProgressSettings)
    out_dir, work_dir, parent_dir = step_dirs(out_dir, work_dir, parent_dir)
    rows, train_examples, extra_counts = _train_examples(settings, snapshot, split_kind)

    work_dir.mkdir(parents=True, exist_ok=True)
    cache_dir = Path(model_cache_dir) if model_cache_dir is not None else work_dir / "base-model"
    from_base = not starts_from_parent(settings, parent_dir)
    model_check = None if from_base else check_parent_model(settings, parent_dir, cache_dir)
    source = resolve_base_model(settings.model, cache_dir) if from_base else str(parent_dir)
    trainer_dir = work_dir / TRAINER_SUBDIR
    val_examples, args = _val_examples_and_args(settings, snapshot, split_kind, trainer_dir)
    transformers.set_seed(args.seed)  # before the model is built: a fresh regression head is drawn from torch's RNG
    tokenizer, model = _load_start(settings, source, from_base)

    trainer, truncated = _trainer(settings, model, tokenizer, args, train_examples, val_examples)
    resume = latest_trainer_checkpoint(trainer_dir)
    if resume is not None:
        log.info("resuming progress training from %s", resume)
    trained = train_or_reload(trainer, resume)
    figures = {
        "examples": len(train_examples),
        "snapshot_examples": len(rows.examples),
        "imported_examples": extra_counts,
        **_data_figures(rows),
        "truncated_inputs": truncated,
        "started_from": "base" if from_base else "parent",
        "start_model": settings.model if from_base else None,
        "model_check": model_check,
        **_trained_figures(trained),
        "val_examples": len(val_examples),
    }
    publish(
        trainer,
        tokenizer,
        out_dir,
        kind="full",
        base_model=None,
        config_file="training_args.json",  # transformers' TrainingArguments as used (the catalog keeps them)
        **_model_card(settings, snapshot, split_kind, figures),
    )
    return figures
