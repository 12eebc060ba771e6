"""Checks run before any training: a config that cannot run here fails at once,
naming the field and the fix, instead of after an hour of tracing and training."""

from __future__ import annotations

import os
from pathlib import Path

from storage.errors import InputError
from tasks.valid_args_memo import remembered_when_valid


def check_model_reference(name: str, field: str) -> None:
    """A builtin name (or alias) usable here, an existing local folder, or something that can be a hub id.

    Accepts exactly the names `tasks.models.loading.resolve_model` resolves: the tiny
    builtins, and the packaged pretrained models (`builtin:all-minilm-l6-v2`, alias
    `minilm`) when their package is installed.
    """
    from tasks.models.loading import (
        ALIASES,
        BUILTIN_PREFIX,
        PACKAGED,
        builtin_names,
        canonical_name,
        is_builtin,
        looks_like_path,
        packaged_model_path,
    )

    canonical = canonical_name(name)
    if is_builtin(canonical):
        which = canonical[len(BUILTIN_PREFIX) :]
        if which in PACKAGED:
            try:
                packaged_model_path(canonical)
            except InputError as e:
                raise InputError(field, f"{name!r}: {e.problem}", e.fix) from e
            return
        from tasks.models import tiny

        if which not in tiny.BUILDERS:
            raise InputError(
                field,
                f"{name!r} is not a builtin model",
                f"use one of {builtin_names()} (or an alias: {sorted(ALIASES)}), a local path or a hub id",
            )
        return
    path = Path(name).expanduser()
    if path.exists():
        if not path.is_dir():
            raise InputError(field, f"{name} is a file, not a model folder", "give the folder that holds config.json")
        return
    if looks_like_path(name):
        raise InputError(
            field,
            f"the model path {name} does not exist",
            "fix the path (a folder written by save_pretrained), or give a hub id",
        )
    check_hub_model(name, field)


HUB_PROBE_TIMEOUT_S = 10.0  # one request to the Hub; transformers itself would retry for about a minute


def check_hub_model(name: str, field: str) -> None:
    """A hub id must be in the local Hugging Face cache, or the Hub must answer for it, before a run
    starts: otherwise transformers retries for about a minute inside the training task and the run
    fails after its other steps have started."""
    from huggingface_hub import HfApi, constants, try_to_load_from_cache
    from huggingface_hub.errors import RepositoryNotFoundError

    if isinstance(try_to_load_from_cache(name, "config.json"), str):
        return
    local = f"give the path of a local copy (a folder with config.json), or download it where there is network (`hf download {name}`) and copy the Hugging Face cache ({constants.HF_HUB_CACHE}) here"
    if os.environ.get("HF_HUB_OFFLINE", "").upper() in {"1", "ON", "YES", "TRUE"}:  # huggingface_hub's rule
        raise InputError(
            field,
            f"{name!r} is a Hugging Face hub id that is not in the local cache, and HF_HUB_OFFLINE is set (nothing is downloaded)",
            f"{local}; or unset HF_HUB_OFFLINE on a machine with network",
        )
    try:
        HfApi().model_info(name, timeout=HUB_PROBE_TIMEOUT_S)
    except RepositoryNotFoundError as e:
        raise InputError(
            field,
            f"{name!r} is not a model on the Hugging Face Hub (or it is private)",
            f"fix the id, log in with `hf auth login` for a private model, or {local}",
        ) from e
    except Exception as e:  # noqa: BLE001  (a refused connection, DNS, a timeout, a 5xx: the Hub cannot be used)
        raise InputError(
            field,
            f"{name!r} is not in the local Hugging Face cache and the Hub cannot be reached ({type(e).__name__})",
            local,
        ) from e


def preflight(trainer: str, settings) -> None:
    """Raise InputError if `settings` of `trainer` cannot run on this machine: `quick_checks`,
    then the trainer's own checks (`TrainerDef.preflight`: its `training:` arguments, the
    hardware; they import torch/TRL)."""
    quick_checks(trainer, settings)
    trainer_checks(trainer, settings)


def quick_checks(trainer: str, settings) -> None:
    """The checks that import no torch/TRL: every base model the declaration names
    (`TrainerDef.model_fields`) and the step's `launch:` (processes, nodes) against this machine."""
    from .registry import get

    definition = get(trainer)
    for attr in definition.model_fields:
        name = getattr(settings, attr, None)
        if isinstance(name, str):
            check_model_reference(name, f"trainers.{trainer}.{attr}")
    check_launch_settings(settings, f"trainers.{trainer}")


def trainer_checks(trainer: str, settings) -> None:
    """The trainer's own checks (`TrainerDef.preflight`): they build its TRL/transformers config."""
    from .registry import get

    definition = get(trainer)
    if definition.preflight is not None:
        check_trainer_settings(definition.preflight, settings, f"trainers.{trainer}")


def check_launch_settings(settings, field: str) -> None:
    """The step's `launch:` (processes, nodes, python) and its `training:` keys that need several
    processes (FSDP, DeepSpeed) against this machine (tasks/trainers/launch.py)."""
    from .launch import NEEDED_PACKAGES, check_distributed_training, check_launch, launch_of

    launch = launch_of(settings)
    training = getattr(settings, "training", None)
    training = training if isinstance(training, dict) else {}
    if training.get("fsdp") or training.get("deepspeed") or (training.get("use_vllm") and launch.python):
        from .training_args import device_capabilities

        check_distributed_training(training, launch, field, device_capabilities()[0])
    if not launch.in_process():
        check_launch(launch, field, needed=NEEDED_PACKAGES + (("vllm",) if training.get("use_vllm") else ()))


@remembered_when_valid  # the trainer's checks build its TRL/transformers config: imports torch, seconds of every run
def check_trainer_settings(check: str, settings, field: str) -> None:
    from .base import load_object

    load_object(check)(settings, field)
