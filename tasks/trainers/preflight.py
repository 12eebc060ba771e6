"""Checks run before any training: a config that cannot run here fails at once,
naming the field and the fix, instead of after an hour of tracing and training."""

from __future__ import annotations

import tempfile
from pathlib import Path

from storage.errors import InputError


def check_model_reference(name: str, field: str) -> None:
    """A builtin name, an existing local folder, or something that can be a hub id."""
    from tasks.models.loading import _looks_like_path, is_builtin

    if is_builtin(name):
        from tasks.models import tiny

        if name.split(":", 1)[1] not in tiny.BUILDERS:
            raise InputError(field, f"{name!r} is not a builtin model",
                             f"use one of {sorted('builtin:' + k for k in tiny.BUILDERS)}, a local path or a hub id")
        return
    path = Path(name).expanduser()
    if path.exists():
        if not path.is_dir():
            raise InputError(field, f"{name} is a file, not a model folder", "give the folder that holds config.json")
        return
    if _looks_like_path(name):
        raise InputError(field, f"the model path {name} does not exist",
                         "fix the path (a folder written by save_pretrained), or give a hub id")


def preflight(trainer: str, settings) -> None:
    """Raise InputError if `settings` of `trainer` cannot run on this machine."""
    for attr in ("model", "backbone"):
        name = getattr(settings, attr, None)
        if isinstance(name, str):
            check_model_reference(name, f"trainers.{trainer}.{attr}")
    if trainer == "sft":
        from tasks.sft.config import build_sft_config

        with tempfile.TemporaryDirectory() as tmp:
            build_sft_config(settings, tmp)
    elif trainer == "progress":
        from tasks.progress.config import resolve_training

        resolve_training(dict(settings.training))
