"""Checkpoints: content ids, atomic publication, the registry, and one training step.

A checkpoint id is a hash of the snapshot id, the trainer, its resolved settings
and the parent checkpoint id (DESIGN.md). Its folder
`<home>/checkpoints/<trainer>/<checkpoint_id>/` appears by one rename, holding the
model (`save_pretrained` layout) and `dojoflow-checkpoint.json`, the manifest
that records where it came from. A half-trained step lives in
`<home>/work/<trainer>/<checkpoint_id>/`, where the trainer resumes after a crash.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path

from storage import atomic, checkpoint_registry
from storage.ids import stable_hash
from storage.snapshot_ref import SnapshotRef

from .trainers.base import SkipTraining
from .trainers.registry import TRAINERS

MANIFEST = "dojoflow-checkpoint.json"
CODE_VERSION = "dojoflow-0.1"


@dataclass(frozen=True)
class CheckpointRef:
    """A published checkpoint: the task result that later steps continue from."""

    checkpoint_id: str
    trainer: str
    path: str
    snapshot_id: str
    parent_id: str | None
    settings_hash: str
    figures: dict
    skipped: str | None = None  # why training was skipped (the parent is carried forward)
    has_model: bool = True  # False: skipped with no parent to carry forward (only a manifest)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict | None) -> "CheckpointRef | None":
        return None if d is None else cls(**d)


# Trainer arguments (trl/transformers) that change how a run is logged or saved, not the model.
BOOKKEEPING_TRAINING_ARGS = frozenset({
    "logging_steps", "logging_strategy", "logging_first_step", "logging_dir", "logging_nan_inf_filter",
    "save_steps", "save_strategy", "save_total_limit", "save_only_model", "report_to", "run_name",
    "disable_tqdm", "log_level", "push_to_hub", "hub_model_id", "hub_strategy",
})


def settings_hash(settings) -> str:
    return stable_hash(settings.model_dump(mode="json"), 16)


def training_identity(settings) -> dict:
    """What of `settings` decides the trained weights: every field except those marked
    `json_schema_extra={"affects_model": False}` (evaluation, logging), and except the
    bookkeeping keys of a `training` dict. A local model folder adds its fingerprint, so
    replacing the model in place retrains."""
    skip = {name for name, f in type(settings).model_fields.items()
            if isinstance(f.json_schema_extra, dict) and f.json_schema_extra.get("affects_model") is False}
    out = settings.model_dump(mode="json", exclude=skip)
    if isinstance(out.get("training"), dict):
        out["training"] = {k: v for k, v in out["training"].items() if k not in BOOKKEEPING_TRAINING_ARGS}
    for attr in ("model", "backbone"):
        if isinstance(out.get(attr), str):
            fingerprint = local_model_fingerprint(out[attr])
            if fingerprint:
                out[f"{attr}_fingerprint"] = fingerprint
    return out


def local_model_fingerprint(name: str) -> str | None:
    """For a local model folder: a hash of its small files' bytes and its large files'
    names and sizes (hashing gigabytes of weights on every run would cost more than the
    check is worth). None for builtin names and hub ids."""
    path = Path(name).expanduser()
    if not path.is_dir():
        return None
    h = hashlib.sha256()
    for f in sorted(p for p in path.rglob("*") if p.is_file()):
        size = f.stat().st_size
        h.update(f"{f.relative_to(path)}\x1f{size}\n".encode())
        if size <= 1 << 20:  # configs, tokenizers, adapters' configs
            h.update(f.read_bytes())
    return h.hexdigest()[:16]


def checkpoint_id(trainer: str, settings, snapshot_id: str, parent_id: str | None) -> str:
    return stable_hash({"trainer": trainer, "settings": training_identity(settings), "snapshot": snapshot_id,
                        "parent": parent_id, "code": CODE_VERSION}, 20)


def checkpoint_dir(home: Path, trainer: str, cid: str) -> Path:
    return Path(home) / "checkpoints" / trainer / cid


def load_published(home: Path, trainer: str, cid: str) -> CheckpointRef | None:
    """A finished checkpoint, if its folder and manifest are complete."""
    path = checkpoint_dir(home, trainer, cid) / MANIFEST
    if not path.exists():
        return None
    return CheckpointRef.from_dict(json.loads(path.read_text())["checkpoint"])


def train_step(home: Path, store, trainer: str, settings, snapshot: SnapshotRef, split_kind: str,
               parent: CheckpointRef | None) -> CheckpointRef:
    """Train one curriculum step of `trainer` and publish its checkpoint atomically."""
    home = Path(home)
    restart = getattr(settings, "restart_from_base", False)
    parent_id = None if (parent is None or restart) else parent.checkpoint_id
    cid = checkpoint_id(trainer, settings, snapshot.snapshot_id, parent_id)
    done = load_published(home, trainer, cid)
    if done is not None:
        return done
    out = checkpoint_dir(home, trainer, cid)
    for orphan in out.parent.glob(f"{cid}{atomic.TMP_MARK}*"):  # left by a killed attempt of this step
        shutil.rmtree(orphan, ignore_errors=True)
    parent_dir = Path(parent.path) if (parent is not None and not restart and parent.has_model) else None
    work_dir = home / "work" / trainer / cid
    work_dir.mkdir(parents=True, exist_ok=True)
    train_fn = TRAINERS[trainer].load("train")
    started = time.perf_counter()
    skipped, has_model = None, True
    with atomic.atomic_path(out) as tmp:
        tmp.mkdir(parents=True)
        try:
            figures = dict(call_trainer(train_fn, home, settings, snapshot, split_kind, parent_dir, tmp, work_dir))
        except SkipTraining as e:
            # Nothing to learn at this step: the parent's model is carried forward unchanged;
            # with no parent, the checkpoint is a manifest that says why (nothing to evaluate).
            figures, skipped, has_model = {}, e.reason, parent_dir is not None
            if has_model:
                shutil.rmtree(tmp)
                shutil.copytree(parent_dir, tmp)
                (tmp / MANIFEST).unlink(missing_ok=True)
        figures["seconds"] = round(time.perf_counter() - started, 3)
        ref = CheckpointRef(checkpoint_id=cid, trainer=trainer, path=str(out), snapshot_id=snapshot.snapshot_id,
                            parent_id=parent_id, settings_hash=settings_hash(settings), figures=figures,
                            skipped=skipped, has_model=has_model)
        atomic.write_json(tmp / MANIFEST, {
            "checkpoint": ref.to_dict(),
            "settings": settings.model_dump(mode="json"),
            "snapshot_repo_ids": list(snapshot.repo_ids),
            "split_kind": split_kind,
            "code_version": CODE_VERSION,
            "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        })
    shutil.rmtree(work_dir, ignore_errors=True)
    checkpoint_registry.register(store, cid, trainer, snapshot.snapshot_id, parent_id, ref.settings_hash, str(out),
                                 figures)
    return ref


def call_trainer(fn, home: Path, *args):
    """Call a trainer's train/evaluate function, telling it where builtin base models are
    built (`<home>/models`) when it takes `model_cache_dir`."""
    import inspect

    if "model_cache_dir" in inspect.signature(fn).parameters:
        return fn(*args, model_cache_dir=Path(home) / "models")
    return fn(*args)


def discard_checkpoint(store, ref: CheckpointRef) -> None:
    """Remove a published checkpoint and its catalog row (a rolled-back step); the next
    run retrains it."""
    path = Path(ref.path)
    if path.exists():
        trash = atomic.temp_sibling(path)
        os.replace(path, trash)
        shutil.rmtree(trash, ignore_errors=True)
    checkpoint_registry.unregister(store, ref.checkpoint_id)
