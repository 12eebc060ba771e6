"""Checkpoints: content ids, atomic publication, the registry, and one training step.

A checkpoint id is a hash of the snapshot id, the trainer, the settings that decide
its weights and the checkpoint it starts from (`plan_step`, docs/architecture.md). Its folder
`<home>/checkpoints/<trainer>/<checkpoint_id>/` appears by one rename, holding the
model (`save_pretrained` layout) and `dojoflow-checkpoint.json`, the manifest
that records where it came from. A half-trained step lives in
`<home>/work/<trainer>/<checkpoint_id>/`, where the trainer resumes after a crash.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import json
import os
import shutil
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, TypeAdapter

from storage import atomic, checkpoint_registry
from storage.atomic import remove_tree
from storage.errors import InputError
from storage.ids import stable_hash
from storage.snapshot_ref import SnapshotRef

from .compute import gpu_seconds
from .models.loading import default_model_cache
from .trainers import registry
from .trainers.base import SkipTraining

MANIFEST = "dojoflow-checkpoint.json"
MANIFEST_FORMAT = 1
# The settings marker of a field that cannot change the weights (evaluation, logging,
# save intervals, paths): Field(..., json_schema_extra={"checkpoint_id": False}).
NOT_IN_ID = "checkpoint_id"


class CheckpointRef(BaseModel):
    """A published checkpoint: the task result that later steps continue from."""

    model_config = ConfigDict(frozen=True)

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
        return self.model_dump(mode="json")

    @classmethod
    def from_dict(cls, d: "dict | CheckpointRef | None") -> "CheckpointRef | None":
        return d if d is None or isinstance(d, cls) else cls.model_validate(d)


class StartingPoints(BaseModel):
    """What a step's trainers can start from: each trainer's checkpoint of the previous
    step, and the checkpoints already trained at this step (for `starts_from`)."""

    model_config = ConfigDict(frozen=True)

    previous: dict[str, CheckpointRef] = {}
    this_step: dict[str, CheckpointRef] = {}


class StepPlan(BaseModel):
    """The checkpoint a training step will publish, and the one it starts from (None: the base model)."""

    model_config = ConfigDict(frozen=True)

    checkpoint_id: str
    parent: CheckpointRef | None
    starts_from: str | None


# Trainer arguments (trl/transformers) that change how a run is logged or saved, not the model.
BOOKKEEPING_TRAINING_ARGS = frozenset(
    {
        "logging_steps",
        "logging_strategy",
        "logging_first_step",
        "logging_dir",
        "logging_nan_inf_filter",
        "save_steps",
        "save_strategy",
        "save_total_limit",
        "save_only_model",
        "report_to",
        "run_name",
        "disable_tqdm",
        "log_level",
        "push_to_hub",
        "hub_model_id",
        "hub_strategy",
        "per_device_eval_batch_size",
        "eval_steps",
        "dataloader_num_workers",
        # Lightning's Trainer (the retriever)
        "log_every_n_steps",
        "enable_model_summary",
        "num_sanity_val_steps",
        "profiler",
    }
)


def settings_hash(settings) -> str:
    return stable_hash(settings.model_dump(mode="json"), 16)


def _identity_dump(model: BaseModel) -> dict:
    out = {}
    for name, f in type(model).model_fields.items():
        if isinstance(f.json_schema_extra, dict) and f.json_schema_extra.get(NOT_IN_ID) is False:
            continue
        value = getattr(model, name)
        out[name] = (
            _identity_dump(value) if isinstance(value, BaseModel) else TypeAdapter(Any).dump_python(value, mode="json")
        )
    return out


def training_identity(trainer: str, settings) -> dict:
    """What of `settings` decides the trained weights: every field except those marked
    `json_schema_extra={"checkpoint_id": False}` (at any depth), and except the
    bookkeeping keys of a `training` dict, in the layout the settings' `identity_layout`
    gives when they have one. A local model folder adds its fingerprint, so replacing the
    model in place retrains."""
    out = _identity_dump(settings)
    if isinstance(out.get("training"), dict):
        out["training"] = {k: v for k, v in out["training"].items() if k not in BOOKKEEPING_TRAINING_ARGS}
    if hasattr(settings, "identity_layout"):  # a settings model whose layout changed keeps its ids
        out = settings.identity_layout(out)
    for attr in registry.get(trainer).model_fields:
        if isinstance(out.get(attr), str):
            fingerprint = local_model_fingerprint(out[attr])
            if fingerprint:
                out[f"{attr}_fingerprint"] = fingerprint
    return out


def code_version(root: Path | None = None) -> dict:
    """The code that trains: Dojoflow's package version (part of checkpoint ids), and the
    git commit of the source tree when there is one, with `dirty`: whether tracked files
    differ from that commit (recorded in manifests and the run's provenance; None outside git).
    `root`: the source tree (this checkout's, unless given)."""
    try:
        package = importlib.metadata.version("dojoflow")
    except importlib.metadata.PackageNotFoundError:
        package = "unknown"
    commit = dirty = None
    root = root or Path(__file__).resolve().parents[1]
    if (root / ".git").exists():
        commit = _git(root, "rev-parse", "HEAD")
        status = _git(root, "status", "--porcelain", "--untracked-files=no") if commit else None
        dirty = None if status is None else bool(status)
    return {"package": package, "git_commit": commit, "dirty": dirty}


def _git(root: Path, *args: str) -> str | None:
    """A git command's stripped output in `root`, None when it fails."""
    try:
        out = subprocess.run(
            ["git", "-C", str(root), *args],
            capture_output=True,
            text=True,
            timeout=10,
            env={"PATH": os.environ.get("PATH", ""), "GIT_CONFIG_NOSYSTEM": "1"},
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


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


def plan_step(trainer: str, settings, snapshot_id: str, starts: StartingPoints | None) -> StepPlan:
    """The one place a training step's starting point and checkpoint id are decided (the
    Prefect cache key and `train_step` both call it).

    A trainer that starts from another (`TrainerDef.starts_from`, or its settings'
    `starts_from`) starts from that trainer's checkpoint of this step; otherwise from its
    own checkpoint of the previous step, or from the base model with `restart_from_base`.
    The id hashes the trainer, the settings that decide the weights, the snapshot, the
    starting checkpoint's id and which trainer it came from, and the package version.
    """
    starts = starts or StartingPoints()
    source = registry.get(trainer).start_of(settings)
    if source is not None:
        parent = starts.this_step.get(source)
        if parent is None:
            raise InputError(
                f"trainers.{trainer}",
                f"starts from the {source} checkpoint of this step, which was not trained first",
                f"enable trainers.{source}",
            )
    elif getattr(settings, "restart_from_base", False):
        parent = None
    else:
        parent = starts.previous.get(trainer)
    parent_id = parent.checkpoint_id if parent is not None else None
    cid = stable_hash(
        {
            "trainer": trainer,
            "settings": training_identity(trainer, settings),
            "snapshot": snapshot_id,
            "parent": parent_id,
            "starts_from": source,
            "code": code_version()["package"],
        },
        20,
    )
    return StepPlan(checkpoint_id=cid, parent=parent, starts_from=source)


def checkpoint_id(trainer: str, settings, snapshot_id: str, starts: StartingPoints | None = None) -> str:
    return plan_step(trainer, settings, snapshot_id, starts).checkpoint_id


def checkpoint_dir(home: Path, trainer: str, cid: str) -> Path:
    return Path(home) / "checkpoints" / trainer / cid


def load_published(home: Path, trainer: str, cid: str) -> CheckpointRef | None:
    """A finished checkpoint, if its folder and manifest are complete."""
    path = checkpoint_dir(home, trainer, cid) / MANIFEST
    if not path.exists():
        return None
    return CheckpointRef.from_dict(json.loads(path.read_text())["checkpoint"])


def train_step(
    home: Path,
    store,
    trainer: str,
    settings,
    snapshot: SnapshotRef,
    split_kind: str,
    starts: StartingPoints | None = None,
) -> CheckpointRef:
    """Train one curriculum step of `trainer` and publish its checkpoint atomically."""
    home = Path(home)
    plan = plan_step(trainer, settings, snapshot.snapshot_id, starts)
    cid, parent = plan.checkpoint_id, plan.parent
    done = load_published(home, trainer, cid)
    if done is not None:
        return done
    out = checkpoint_dir(home, trainer, cid)
    for orphan in out.parent.glob(f"{cid}{atomic.TMP_MARK}*"):  # left by a killed attempt of this step
        shutil.rmtree(orphan, ignore_errors=True)
    parent_dir = Path(parent.path) if (parent is not None and parent.has_model) else None
    work_dir = home / "work" / trainer / cid
    work_dir.mkdir(parents=True, exist_ok=True)
    definition = registry.get(trainer)
    started = time.perf_counter()
    with atomic.atomic_path(out) as tmp:
        tmp.mkdir(parents=True)
        figures, skipped, has_model = _train_into(
            definition, home, settings, snapshot, split_kind, parent_dir, tmp, work_dir
        )
        figures["seconds"] = round(time.perf_counter() - started, 3)
        if (gpu := gpu_seconds(figures["seconds"])) is not None:  # absent on a CPU: there is no such figure
            figures["gpu_seconds"] = gpu
        ref = CheckpointRef(
            checkpoint_id=cid,
            trainer=trainer,
            path=str(out),
            snapshot_id=snapshot.snapshot_id,
            parent_id=parent.checkpoint_id if parent else None,
            settings_hash=settings_hash(settings),
            figures=figures,
            skipped=skipped,
            has_model=has_model,
        )
        atomic.write_json(tmp / MANIFEST, _manifest(ref, definition, plan, settings, snapshot, split_kind))
    remove_tree(work_dir)
    checkpoint_registry.register(
        store,
        cid,
        trainer,
        snapshot.snapshot_id,
        ref.parent_id,
        ref.settings_hash,
        str(out),
        figures,
        resolved_settings(settings, out),
    )
    return ref


# The trainer library's own config as it was used, where a trainer writes one into its checkpoint
# (tasks/trainers/lifecycle.py publish(config_file=...)): TRL's SFTConfig/GRPOConfig, transformers'
# TrainingArguments. The retriever's Lightning Trainer takes only Dojoflow's settings.
TRAINER_CONFIG_FILES = ("sft_config.json", "grpo_config.json", "training_args.json")


def resolved_settings(settings, folder: Path) -> dict:
    """{"dojoflow": the trainer's settings with every default filled in, "library": the trainer
    library's whole config as used (JSON), "library_file": which file it came from}: what the
    catalog keeps per checkpoint, so the card and `card --against` see the settings as used."""
    found = next((folder / f for f in TRAINER_CONFIG_FILES if (folder / f).is_file()), None)
    library = json.loads(found.read_text()) if found is not None else None
    return {"dojoflow": settings.model_dump(mode="json"), "library": library, "library_file": found and found.name}


def _train_into(definition, home: Path, settings, snapshot, split_kind, parent_dir: Path | None, tmp: Path, work_dir):
    """Train into `tmp`: (figures, why training was skipped or None, whether `tmp` holds a model).

    With nothing to learn at this step (`SkipTraining`), the parent's model is carried forward
    unchanged; with no parent, the checkpoint is a manifest that says why (nothing to evaluate)."""
    try:
        from .trainers.launch import launch_of, threads_of_a_child

        launch = launch_of(settings)
        if launch.in_process():  # with a child's thread count: the weights a 1-process child writes
            train_fn = definition.train_fn()
            # A settings model without `launch` never trains in a child (docs/adding-a-trainer.md):
            # no child's count to match, and no torch imported for a trainer that may not use it.
            matched = threads_of_a_child(launch) if hasattr(settings, "launch") else contextlib.nullcontext()
            with matched:
                figures = train_fn(
                    settings, snapshot, split_kind, parent_dir, tmp, work_dir, model_cache_dir=default_model_cache(home)
                )
        else:  # torchrun's processes, supervised here (tasks/trainers/supervise.py, docs/scaling.md)
            from .trainers.supervise import train_in_child

            figures = train_in_child(
                definition.name,
                settings,
                snapshot,
                split_kind,
                parent_dir,
                tmp,
                work_dir,
                model_cache_dir=default_model_cache(home),
                launch=launch,
            )
        return dict(figures), None, True
    except SkipTraining as e:
        if parent_dir is not None:
            shutil.rmtree(tmp)
            shutil.copytree(parent_dir, tmp)
            (tmp / MANIFEST).unlink(missing_ok=True)
        return {}, e.reason, parent_dir is not None


def _manifest(ref: CheckpointRef, definition, plan: StepPlan, settings, snapshot: SnapshotRef, split_kind: str) -> dict:
    """`dojoflow-checkpoint.json`: the checkpoint and where it came from."""
    parent = plan.parent
    return {
        "format": MANIFEST_FORMAT,
        "checkpoint": ref.to_dict(),
        "holds": definition.holds,
        "starts_from": plan.starts_from,
        "parent_path": parent.path if parent else None,
        "settings": settings.model_dump(mode="json"),
        "snapshot_repo_ids": list(snapshot.repo_ids),
        "split_kind": split_kind,
        "code": code_version(),
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def discard_checkpoint(store, ref: CheckpointRef) -> None:
    """Remove a published checkpoint and its catalog row (a rolled-back step); the next
    run retrains it."""
    atomic.remove_tree(Path(ref.path))
    checkpoint_registry.unregister(store, ref.checkpoint_id)
