"""`train_retriever`: one curriculum step of the dense premise retriever (PyTorch Lightning).

Implements the `train` half of `tasks/trainers/base.py`:

    train_retriever(settings, snapshot, split_kind, parent_dir, out_dir, work_dir, *, model_cache_dir) -> dict

1. Examples: every (tactic, gold premise) pair of the snapshot's train split, with
   negatives from the theorem's accessible premises (`tasks.retriever.data`). No pair
   at all: `SkipTraining`.
2. Start: the parent checkpoint's weights when there is a parent (never the base
   backbone then; a backbone of another hidden size is refused), else the backbone.
   With `ewc_lambda > 0`, the parent's Fisher is loaded and checked against the
   parent's weights, and the EWC penalty anchors training to them.
3. Lightning fits, with the `training:` arguments over Dojoflow's defaults
   (`config.resolve_training`); `<work_dir>/checkpoints/last.ckpt` is written every
   `checkpoint_every_n_steps`, every `checkpoint_every_minutes` and at each epoch end
   (tasks/trainers/time_checkpoints.py), and a rerun of the same step resumes
   from it (`ckpt_path="last"`): weights, optimizer, step count, the position in the
   epoch's data order and the random state are restored (`resume.py`), so a resume from a
   mid-epoch checkpoint ends with the weights of an uninterrupted run.
4. `out_dir` receives the encoder and tokenizer (`save_pretrained`), the Fisher of the
   new weights (`fisher.safetensors`, `fisher.json`) and `dojoflow_model.json` (settings,
   pooling, provenance, figures).

Example (tiny local model, a snapshot built by `storage.snapshot.build_snapshot`):

    from tasks.retriever import RetrieverSettings, train_retriever
    figures = train_retriever(RetrieverSettings(training={"max_steps": 20}), snapshot, "random", None,
                              Path("out"), Path("work"))
"""

from __future__ import annotations

import logging
import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from storage import atomic
from storage.snapshot_ref import SnapshotRef
from tasks.models.loading import default_model_cache
from tasks.trainers.base import SkipTraining
from tasks.trainers.lifecycle import step_dirs
from tasks.trainers.log_progress import lightning_progress
from tasks.trainers.time_checkpoints import lightning_time_checkpoint

from .backbone import hidden_size, load_config, load_encoder, resolve_backbone, weights_sha256
from .config import RetrieverSettings, resolve_training
from .data import PremiseCorpus, build_examples
from .errors import BackboneMismatchError, CheckpointError
from .ewc import FISHER_FILE, anchor_weights, compute_fisher, load_fisher, save_fisher
from .pairs import EpochOrder, RetrievalPairs
from .runtime import RETRIEVER_JSON, as_settings, read_retriever_json, torch_device

logger = logging.getLogger(__name__)

NO_GOLD_REASON = "no tactic in the train split has a gold premise in the corpus"
RETRIEVER_FORMAT = 1


def check_backbone(settings: RetrieverSettings, parent_dir: Path, cache_dir: Path) -> int:
    """The parent's hidden size; raises `BackboneMismatchError` if `settings.backbone` differs.

    The backbone is only resolved when it is not the model the parent was trained from
    (aliases resolved); a backbone that cannot be resolved offline is not an error, since
    the parent's weights are what training continues from (`tasks.trainers.parent`).
    """
    from tasks.trainers.parent import configured_architecture

    try:
        parent_hidden = hidden_size(load_config(str(parent_dir)))
    except OSError as e:
        raise CheckpointError(parent_dir, f"its config.json cannot be read ({e})") from e
    parent_backbone = ((read_retriever_json(parent_dir) or {}).get("settings") or {}).get("backbone")
    arch, _ = configured_architecture(settings.backbone, parent_backbone, parent_dir, cache_dir)
    backbone_hidden = arch[1] if arch else None
    if backbone_hidden is not None and backbone_hidden != parent_hidden:  # None: nothing to compare
        raise BackboneMismatchError(settings.backbone, backbone_hidden, parent_dir, parent_hidden)
    return parent_hidden


def _fisher_examples(pairs: RetrievalPairs, collate, settings: RetrieverSettings):
    """The first `fisher_examples` pairs of a fixed shuffle (negatives of a fixed epoch), one per batch."""
    import torch

    fixed = RetrievalPairs(pairs.corpus, pairs.examples, pairs.num_negatives, pairs.num_in_file_negatives, pairs.seed)
    fixed.set_epoch(-1)
    order = torch.randperm(len(fixed), generator=torch.Generator().manual_seed(settings.seed)).tolist()
    for i in order[: settings.fisher_examples]:
        yield collate([fixed[i]])


@dataclass
class _Start:
    """The encoder a step trains, where it came from, and the parent it is anchored to."""

    encoder: Any
    tokenizer: Any
    source: str  # the parent folder or the resolved backbone
    anchor: Any  # an EWCAnchor, or None (no parent, ewc_lambda 0, or no parent Fisher)
    parent_hash: str | None


def _start(settings: RetrieverSettings, parent_dir: Path | None, cache_dir: Path) -> _Start:
    """The parent checkpoint's weights (and its Fisher for EWC), or the base backbone."""
    import pytorch_lightning as pl

    from .model import EWCAnchor

    if parent_dir is not None:
        check_backbone(settings, parent_dir, cache_dir)
        source = str(parent_dir)
    else:
        source = resolve_backbone(settings.backbone, cache_dir)
    pl.seed_everything(settings.seed, workers=True, verbose=False)
    encoder, tokenizer = load_encoder(source)
    if parent_dir is None:
        return _Start(encoder, tokenizer, source, None, None)
    anchor = None
    if settings.ewc_lambda > 0:
        fisher = load_fisher(parent_dir, encoder)
        if fisher is None:
            logger.warning(
                "ewc_lambda=%s but the parent %s has no %s: this step trains without EWC",
                settings.ewc_lambda,
                parent_dir,
                FISHER_FILE,
            )
        else:
            anchor = EWCAnchor(fisher, anchor_weights(encoder, fisher))
    return _Start(encoder, tokenizer, source, anchor, weights_sha256(parent_dir))


def distributed_position() -> tuple[int, int]:
    """(rank, world size) of this process: torchrun's variables (`tasks/trainers/worker.py`), else (0, 1)."""
    return int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))


def ddp_arguments(settings: RetrieverSettings) -> dict:
    """Under torchrun with several processes: Lightning's DDP over them (`devices` per node,
    `num_nodes`), with Dojoflow's own sharding of the epoch (`EpochOrder`), not Lightning's
    sampler wrapper. A `strategy` the user set (e.g. fsdp) is kept; `auto` becomes ddp."""
    world = distributed_position()[1]
    if world == 1:
        return {}
    local = int(os.environ.get("LOCAL_WORLD_SIZE", world))
    strategy = settings.training.get("strategy", "auto")
    return {
        "devices": local,
        "num_nodes": world // local,
        # the encoder's pooler is not used (mean pooling): DDP must not wait for its gradients
        "strategy": "ddp_find_unused_parameters_true" if strategy == "auto" else strategy,
        "use_distributed_sampler": False,
    }


def _loader(settings: RetrieverSettings, pairs: RetrievalPairs, collate):
    """Batches of `pairs` whose order and negatives depend on (seed, epoch) only; the sampler resumes mid-epoch."""
    import torch
    from torch.utils.data import DataLoader

    rank, world = distributed_position()
    order = EpochOrder(pairs, settings.batch_size, settings.seed, rank, world)
    loader = DataLoader(
        pairs,
        batch_size=settings.batch_size,
        sampler=order,
        collate_fn=collate,
        num_workers=settings.num_workers,
        generator=torch.Generator().manual_seed(settings.seed),
    )
    return order, loader


def _lightning_trainer(settings: RetrieverSettings, arguments: dict, order: EpochOrder, ckpt_dir: Path, work_dir: Path):
    """Lightning's Trainer with the step's `arguments` and Dojoflow's checkpoint callbacks."""
    import pytorch_lightning as pl
    from pytorch_lightning.callbacks import ModelCheckpoint

    from .resume import ExactResume

    checkpointing = ModelCheckpoint(
        dirpath=ckpt_dir,
        save_last=True,
        save_top_k=0,
        every_n_train_steps=settings.checkpoint_every_n_steps,
        save_on_train_epoch_end=True,
    )
    callbacks = [
        checkpointing,
        ExactResume(order),
        lightning_time_checkpoint(ckpt_dir, settings.checkpoint_every_minutes),  # after ExactResume
        lightning_progress(),
    ]
    arguments = {"enable_model_summary": False, "num_sanity_val_steps": 0, **arguments, **ddp_arguments(settings)}
    return pl.Trainer(
        **arguments, callbacks=callbacks, logger=False, enable_progress_bar=False, default_root_dir=str(work_dir)
    )


def _fit(trainer, module, loader, ckpt_dir: Path) -> bool:
    """Fit, resuming from `last.ckpt` when a killed attempt left one; whether it resumed."""
    resumed = (ckpt_dir / "last.ckpt").exists()
    if resumed:
        logger.info("resuming retriever training from %s", ckpt_dir / "last.ckpt")
    with warnings.catch_warnings():  # Lightning warns that a plain DataLoader cannot resume; ExactResume does
        warnings.filterwarnings("ignore", message="You're resuming from a checkpoint that ended before the epoch")
        trainer.fit(module, train_dataloaders=loader, ckpt_path="last" if resumed else None)
    return resumed


def train_retriever(
    settings,
    snapshot: SnapshotRef,
    split_kind: str,
    parent_dir: Path | None,
    out_dir: Path,
    work_dir: Path,
    *,
    model_cache_dir: Path | None = None,
) -> dict:
    """Train the retriever on `snapshot`'s train split; see the module docstring."""
    from .model import Collator, RetrieverModule

    settings = as_settings(settings)
    out_dir, work_dir, parent_dir = step_dirs(out_dir, work_dir, parent_dir)
    cache_dir = Path(settings.model_cache_dir or model_cache_dir or default_model_cache())
    arguments = resolve_training(settings)  # checked once; a bad argument fails before data is read
    corpus = PremiseCorpus.from_snapshot(snapshot)
    examples, report = build_examples(snapshot, split_kind, "train", corpus)
    if not examples:
        raise SkipTraining(NO_GOLD_REASON)
    work_dir.mkdir(parents=True, exist_ok=True)
    out_dir.mkdir(parents=True, exist_ok=True)

    start = _start(settings, parent_dir, cache_dir)
    optimizer = settings.optimizer
    module = RetrieverModule(
        start.encoder,
        loss=settings.loss,
        temperature=settings.temperature,
        lr=optimizer.lr,
        weight_decay=optimizer.weight_decay,
        warmup_steps=optimizer.warmup_steps,
        ewc_lambda=settings.ewc_lambda,
        ewc=start.anchor,
    )
    pairs = RetrievalPairs(corpus, examples, settings.num_negatives, settings.num_in_file_negatives, settings.seed)
    collate = Collator(start.tokenizer, corpus.texts, settings.max_seq_len)
    order, loader = _loader(settings, pairs, collate)
    ckpt_dir = work_dir / "checkpoints"
    trainer = _lightning_trainer(settings, arguments, order, ckpt_dir, work_dir)
    resumed = _fit(trainer, module, loader, ckpt_dir)
    if not trainer.is_global_zero:
        return {}
    run = _Run(settings, snapshot, split_kind, parent_dir, start, module, trainer, resumed)
    return _publish(run, out_dir, pairs, collate, len(examples), report)


@dataclass
class _Run:
    """What a finished fit leaves for publishing."""

    settings: RetrieverSettings
    snapshot: SnapshotRef
    split_kind: str
    parent_dir: Path | None
    start: _Start
    module: Any
    trainer: Any
    resumed: bool


def _publish(run: _Run, out_dir: Path, pairs: RetrievalPairs, collate, n_examples: int, report) -> dict:
    """Save the encoder, tokenizer, Fisher and `dojoflow_model.json` into `out_dir`; the figures."""
    settings, module, start = run.settings, run.module, run.start
    module.to(torch_device(settings))
    start.encoder.save_pretrained(out_dir)
    start.tokenizer.save_pretrained(out_dir)
    fisher_meta = None
    if settings.fisher_examples > 0:
        fisher, n_fisher = compute_fisher(module, _fisher_examples(pairs, collate, settings))
        extra = {"snapshot_id": run.snapshot.snapshot_id, "split_kind": run.split_kind}
        fisher_meta = save_fisher(out_dir, fisher, n_fisher, extra=extra)
    module.cpu()
    figures = {
        "examples": n_examples,
        "pairs": len(pairs),
        "gold": report.to_dict(),
        "global_step": int(run.trainer.global_step),
        "epochs": int(run.trainer.current_epoch),
        "mean_loss": module.loss_sum / module.loss_count if module.loss_count else None,
        "last_loss": module.last_loss,
        "ewc": {"active": start.anchor is not None, "lambda": settings.ewc_lambda, "last_penalty": module.last_penalty},
        "fisher_examples": fisher_meta["num_examples"] if fisher_meta else 0,
        "resumed": run.resumed,
        "weights_sha256": weights_sha256(out_dir),
    }
    atomic.write_json(out_dir / RETRIEVER_JSON, _model_card(run, fisher_meta, figures))
    return figures


def _model_card(run: _Run, fisher_meta: dict | None, figures: dict) -> dict:
    config = run.start.encoder.config
    return {
        "format": RETRIEVER_FORMAT,
        "trainer": "retriever",
        "kind": "full",
        "base_model": None,
        "pooling": "mean",
        "normalize": True,
        "score": "cosine",
        "settings": run.settings.model_dump(mode="json"),
        "source": run.start.source,
        "parent_dir": str(run.parent_dir) if run.parent_dir else None,
        "parent_weights_sha256": run.start.parent_hash,
        "model_type": config.model_type,
        "hidden_size": hidden_size(config),
        "snapshot_id": run.snapshot.snapshot_id,
        "split_kind": run.split_kind,
        "fisher": fisher_meta,
        "figures": figures,
    }
