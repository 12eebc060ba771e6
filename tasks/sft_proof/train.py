"""One curriculum step of whole-proof SFT: train on (statement -> whole proof) examples.

`train_sft_proof` implements `tasks.trainers.base.TrainFn`. Its data is the snapshot's: the traced
train theorems' whole proofs (tasks/sft_proof/traced.py; `traced_proofs`), plus the verified whole
proofs a snapshot built by whole-proof expert iteration carries (storage/proof_snapshot.py: found
proofs, statement sets' verified proofs), so a checkpoint id, which hashes the snapshot id, changes
when the proofs do. Starting points, LoRA, resume and publication are SFT's
(tasks/trainers/lifecycle.py, docs/sft.md); the loss falls on the proof only (TRL SFTTrainer on
prompt-completion data with `completion_only_loss`).
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from storage.proof_snapshot import extra_proofs
from storage.snapshot_ref import SnapshotRef
from tasks.models.loading import latest_trainer_checkpoint
from tasks.trainers import lifecycle as step
from tasks.trainers.base import SkipTraining

from .config import SFTProofSettings, build_config
from .data import build_examples

log = logging.getLogger(__name__)
NAME = "sft_proof"


def proof_rows(settings: SFTProofSettings, snapshot: SnapshotRef, split_kind: str) -> tuple[list[dict], dict]:
    """(the training rows, counts by origin): traced whole proofs, then the snapshot's extra proofs."""
    from storage.store import Store

    from .traced import traced_whole_proofs

    rows, counts = [], {}
    if settings.traced_proofs:
        traced, c = traced_whole_proofs(Store(Path(snapshot.store_root)), snapshot, split_kind, settings.projects)
        rows += traced
        counts.update({f"traced_{k}" if not k.startswith("traced") else k: v for k, v in c.items()})
    extra = extra_proofs(snapshot, split_kind)
    for r in extra:
        counts[r["origin"]] = counts.get(r["origin"], 0) + 1
    return rows + extra, counts


def train_sft_proof(
    settings: SFTProofSettings | dict,
    snapshot: SnapshotRef,
    split_kind: str,
    parent_dir: Path | None,
    out_dir: Path,
    work_dir: Path,
    *,
    model_cache_dir: Path | None = None,
    callbacks: list | None = None,
) -> dict:
    """Train on the snapshot's whole proofs; write the model (or adapter) into `out_dir`."""
    settings = step.coerce_settings(settings, SFTProofSettings)
    started = time.monotonic()
    out_dir, work_dir, parent = step.step_dirs(out_dir, work_dir, parent_dir)
    rows, counts = proof_rows(settings, snapshot, split_kind)
    if not rows:
        raise SkipTraining(f"snapshot {snapshot.snapshot_id} has no whole proof in its {split_kind}/train split")
    start = step.causal_lm_start(settings, parent, step.model_cache(model_cache_dir))
    examples = build_examples(rows, settings, start.tokenizer)
    if len(examples) == 0:
        raise SkipTraining(f"every whole proof of snapshot {snapshot.snapshot_id} was skipped ({examples.skipped})")
    trainer_dir = work_dir / step.TRAINER_SUBDIR
    args = build_config(settings, trainer_dir)
    resume = latest_trainer_checkpoint(trainer_dir)
    log.info(
        "whole-proof SFT on %d examples (%s), from %s, resume=%s", len(examples), counts, start.started_from, resume
    )
    trainer = step.sft_trainer(start, args, examples.to_dataset(), settings, callbacks)
    trained = step.train_or_reload(trainer, resume)
    figures = {
        "train_loss": trained.train_loss,
        "steps": trained.steps,
        "epochs": trained.epochs,
        "examples": len(examples),
        "rows": len(rows),
        "by_origin": counts,
        "skipped": examples.skipped,
        "seconds": round(time.monotonic() - started, 3),
        "mode": start.kind,
        "started_from": start.started_from,
        "resumed_from": trained.resumed_from,
    }
    step.publish_started(
        trainer,
        start,
        out_dir,
        settings,
        config_file="sft_proof_config.json",
        trainer=NAME,
        **step.provenance(settings, snapshot, split_kind, parent),
        figures=figures,
    )
    return figures
