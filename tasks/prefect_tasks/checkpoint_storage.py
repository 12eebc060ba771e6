"""Checkpoints on the result storage block (`result_storage`, docs/operations.md): a step's
trained checkpoint folder is copied to `checkpoints/<trainer>/<id>/` on the block, and a cached
step whose folder is missing from this home fetches it from there instead of training again.

A copy is complete once its `.dojoflow-complete` marker is written, after every file: a copy
cut short is never fetched. A fetch lands in a temporary folder beside the checkpoint and is
renamed into place, so a reader never sees half a checkpoint.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE
from prefect.filesystems import WritableFileSystem

from ..checkpoints import CheckpointRef, checkpoint_dir, load_published

COMPLETE = ".dojoflow-complete"


def block_key(trainer: str, checkpoint_id: str) -> str:
    return f"checkpoints/{trainer}/{checkpoint_id}"


@task(name="share-checkpoint", task_run_name="share-checkpoint[{ref.trainer} step {step}]", cache_policy=NO_CACHE)
def share_checkpoint_task(results: WritableFileSystem, ref: CheckpointRef, step: int) -> str | None:
    """Copy the checkpoint folder to the block; its key there, or None (nothing to copy)."""
    src = Path(ref.path)
    if not src.is_dir():
        return None
    key = block_key(ref.trainer, ref.checkpoint_id)
    results.put_directory(local_path=str(src), to_path=key)
    results.write_path(f"{key}/{COMPLETE}", b"")
    return key


def fetch_checkpoint(results, home: str, trainer: str, checkpoint_id: str) -> CheckpointRef | None:
    """The checkpoint fetched from the block into `home`, or None when the block has no complete copy."""
    key = block_key(trainer, checkpoint_id)
    try:
        results.read_path(f"{key}/{COMPLETE}")
    except Exception:  # noqa: BLE001 (each file system says "missing" its own way)
        return None
    target = checkpoint_dir(Path(home), trainer, checkpoint_id)
    partial = target.with_name(f"{target.name}.fetching-{os.getpid()}")
    shutil.rmtree(partial, ignore_errors=True)
    partial.parent.mkdir(parents=True, exist_ok=True)
    results.get_directory(from_path=key, local_path=str(partial))
    (partial / COMPLETE).unlink(missing_ok=True)
    try:
        partial.rename(target)
    except OSError:  # another run fetched it meanwhile
        shutil.rmtree(partial, ignore_errors=True)
    return load_published(Path(home), trainer, checkpoint_id)
