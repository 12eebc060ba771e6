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
3. Lightning fits; `<work_dir>/checkpoints/last.ckpt` is written every
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
    figures = train_retriever(RetrieverSettings(max_steps=20), snapshot, "random", None,
                              Path("out"), Path("work"))
"""

from __future__ import annotations

import logging
import warnings
from pathlib import Path

from storage import atomic
from storage.snapshot_ref import SnapshotRef
from tasks.models.loading import default_model_cache
from tasks.trainers.base import SkipTraining
from tasks.trainers.time_checkpoints import lightning_time_checkpoint

from .backbone import hidden_size, load_config, load_encoder, resolve_backbone, weights_sha256
from .config import RetrieverSettings
from .data import EpochOrder, PremiseCorpus, RetrievalPairs, build_examples
from .errors import BackboneMismatchError, CheckpointError
from .ewc import FISHER_FILE, anchor_weights, compute_fisher, load_fisher, save_fisher
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
    import pytorch_lightning as pl
    import torch
    from pytorch_lightning.callbacks import ModelCheckpoint
    from torch.utils.data import DataLoader

    from .model import Collator, EWCAnchor, RetrieverModule
    from .resume import ExactResume

    settings = as_settings(settings)
    out_dir, work_dir = Path(out_dir), Path(work_dir)
    parent_dir = Path(parent_dir) if parent_dir is not None else None
    cache_dir = Path(settings.model_cache_dir or model_cache_dir or default_model_cache())

    # -- data ------------------------------------------------------------------------------
    corpus = PremiseCorpus.from_snapshot(snapshot)
    examples, report = build_examples(snapshot, split_kind, "train", corpus)
    if not examples:
        raise SkipTraining(NO_GOLD_REASON)
    work_dir.mkdir(parents=True, exist_ok=True)
    out_dir.mkdir(parents=True, exist_ok=True)

    # -- model: parent weights (+ Fisher) or the base backbone --------------------------------
    if parent_dir is not None:
        check_backbone(settings, parent_dir, cache_dir)
        source = str(parent_dir)
    else:
        source = resolve_backbone(settings.backbone, cache_dir)
    pl.seed_everything(settings.seed, workers=True, verbose=False)
    encoder, tokenizer = load_encoder(source)
    anchor, parent_hash = None, None
    if parent_dir is not None:
        parent_hash = weights_sha256(parent_dir)
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
    module = RetrieverModule(
        encoder,
        loss=settings.loss,
        temperature=settings.temperature,
        lr=settings.lr,
        weight_decay=settings.weight_decay,
        warmup_steps=settings.warmup_steps,
        ewc_lambda=settings.ewc_lambda,
        ewc=anchor,
    )

    pairs = RetrievalPairs(corpus, examples, settings.num_negatives, settings.num_in_file_negatives, settings.seed)
    collate = Collator(tokenizer, corpus.texts, settings.max_seq_len)
    # The order of each epoch depends on (seed, epoch) only, and so do its negatives.
    order = EpochOrder(pairs, settings.batch_size, settings.seed)
    loader = DataLoader(
        pairs,
        batch_size=settings.batch_size,
        sampler=order,
        collate_fn=collate,
        num_workers=settings.num_workers,
        generator=torch.Generator().manual_seed(settings.seed),
    )

    ckpt_dir = work_dir / "checkpoints"
    checkpointing = ModelCheckpoint(
        dirpath=ckpt_dir,
        save_last=True,
        save_top_k=0,
        every_n_train_steps=settings.checkpoint_every_n_steps,
        save_on_train_epoch_end=True,
    )
    trainer = pl.Trainer(
        accelerator=settings.accelerator,
        devices=settings.devices,
        strategy=settings.strategy,
        precision=settings.precision,
        max_epochs=settings.max_epochs,
        max_steps=settings.max_steps,
        accumulate_grad_batches=settings.accumulate_grad_batches,
        gradient_clip_val=settings.gradient_clip_val,
        callbacks=[
            checkpointing,
            ExactResume(order),
            lightning_time_checkpoint(ckpt_dir, settings.checkpoint_every_minutes),  # after ExactResume
        ],
        logger=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
        log_every_n_steps=settings.log_every_n_steps,
        default_root_dir=str(work_dir),
    )
    resumed = (ckpt_dir / "last.ckpt").exists()
    if resumed:
        logger.info("resuming retriever training from %s", ckpt_dir / "last.ckpt")
    with warnings.catch_warnings():  # Lightning warns that a plain DataLoader cannot resume; ExactResume does
        warnings.filterwarnings("ignore", message="You're resuming from a checkpoint that ended before the epoch")
        trainer.fit(module, train_dataloaders=loader, ckpt_path="last" if resumed else None)
    if not trainer.is_global_zero:
        return {}

    # -- save: model, tokenizer, Fisher, dojoflow_model.json-------------------------------------
    device = torch_device(settings)
    module.to(device)
    encoder.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    fisher_meta = None
    if settings.fisher_examples > 0:
        fisher, n_examples = compute_fisher(module, _fisher_examples(pairs, collate, settings))
        fisher_meta = save_fisher(
            out_dir, fisher, n_examples, extra={"snapshot_id": snapshot.snapshot_id, "split_kind": split_kind}
        )
    module.cpu()
    w_hash = weights_sha256(out_dir)
    figures = {
        "examples": len(examples),
        "pairs": len(pairs),
        "gold": report.to_dict(),
        "global_step": int(trainer.global_step),
        "epochs": int(trainer.current_epoch),
        "mean_loss": module.loss_sum / module.loss_count if module.loss_count else None,
        "last_loss": module.last_loss,
        "ewc": {"active": anchor is not None, "lambda": settings.ewc_lambda, "last_penalty": module.last_penalty},
        "fisher_examples": fisher_meta["num_examples"] if fisher_meta else 0,
        "resumed": resumed,
        "weights_sha256": w_hash,
    }
    config = encoder.config
    atomic.write_json(
        out_dir / RETRIEVER_JSON,
        {
            "format": RETRIEVER_FORMAT,
            "trainer": "retriever",
            "kind": "full",
            "base_model": None,
            "pooling": "mean",
            "normalize": True,
            "score": "cosine",
            "settings": settings.model_dump(mode="json"),
            "source": source,
            "parent_dir": str(parent_dir) if parent_dir else None,
            "parent_weights_sha256": parent_hash,
            "model_type": config.model_type,
            "hidden_size": hidden_size(config),
            "snapshot_id": snapshot.snapshot_id,
            "split_kind": split_kind,
            "fisher": fisher_meta,
            "figures": figures,
        },
    )
    return figures
