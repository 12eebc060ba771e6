"""The one check of a trainer's pass-through `training:` arguments (SFT, progress, GRPO, retriever).

A trainer's `training:` dict goes unchanged into a TRL/transformers config dataclass
(`trl.SFTConfig`, `transformers.TrainingArguments`, `trl.GRPOConfig`) or into Lightning's
`pytorch_lightning.Trainer` (the retriever, `LIGHTNING_TRAINER`). Before any run
(preflight) and again when the config is built, `check_training_args` checks it
against that class, with one rule for every trainer:

- keys Dojoflow sets itself (`RESERVED_KEYS`, `LIGHTNING_RESERVED_KEYS`) are refused, saying why;
- a key the class does not have is refused, with the closest names;
- a value of the wrong type is refused; a YAML string such as '1e-4' becomes a number;
- a value that is not a finite number (`nan`, `inf`) is refused, naming it;
- a value that would train nothing (`num_train_epochs` or `max_epochs` <= 0 without
  `max_steps`, `max_steps` 0 or below -1, a negative learning rate, a batch size or
  gradient accumulation < 1) is refused;
- mixed precision is checked against the machine the step runs on (`check_precision`:
  bf16 needs a GPU that supports it, fp16 a CUDA GPU; Lightning's `precision` and
  `accelerator` alike), one error shape for every trainer;
- the class itself is built once (mixed precision off, on CPU, so that a laptop and
  the GPU machine agree), so its own cross-field checks apply.

Errors are `InputError`s naming `<field>.<key>`, e.g. `trainers.sft.training.learning_rate`.
Importing this module imports no torch; checking imports the target class.
"""

from __future__ import annotations

import dataclasses
import difflib
import enum
import inspect
import logging
import math
import os
import tempfile
import typing
import warnings
from contextlib import contextmanager
from typing import Any

from storage.errors import InputError

from .base import load_object

RESERVED_KEYS: dict[str, str] = {
    "output_dir": "Dojoflow keeps Trainer checkpoints in the step's work folder, so that a rerun resumes from them",
    "resume_from_checkpoint": "Dojoflow resumes from the latest complete checkpoint in the work folder by itself",
    "overwrite_output_dir": "the work folder is managed by Dojoflow",
}
LIGHTNING_RESERVED_KEYS: dict[str, str] = {
    "callbacks": "Dojoflow adds its checkpoint, exact-resume and timed-checkpoint callbacks",
    "logger": "the training loss goes to Dojoflow's log and the step's figures",
    "default_root_dir": "Dojoflow keeps Lightning checkpoints in the step's work folder, so that a rerun resumes",
    "enable_checkpointing": "resumable checkpoints are always written: set checkpoint_every_n_steps instead",
    "enable_progress_bar": "progress goes to Dojoflow's log, not as a bar on the terminal",
}


@dataclasses.dataclass(frozen=True)
class TrainingTarget:
    """The class a `training:` dict goes into, and how the check builds it once."""

    ref: str  # "module:Class"
    dir_arg: str  # the argument naming the output folder (a temporary one for the check)
    probe: dict[str, Any]  # what the check's construction runs with: on CPU, no mixed precision
    reserved: dict[str, str]  # arguments Dojoflow sets itself, and why


def trl_target(ref: str) -> TrainingTarget:
    """A TRL/transformers config dataclass (`trl:SFTConfig`, `transformers:TrainingArguments`, ...)."""
    return TrainingTarget(ref, "output_dir", {"bf16": False, "fp16": False, "use_cpu": True}, RESERVED_KEYS)


LIGHTNING_TRAINER = TrainingTarget(
    "pytorch_lightning:Trainer",
    "default_root_dir",
    {
        "accelerator": "cpu",
        "devices": 1,
        "strategy": "auto",
        "precision": "32-true",
        "logger": False,
        "enable_checkpointing": False,
        "enable_progress_bar": False,
        "enable_model_summary": False,
    },
    LIGHTNING_RESERVED_KEYS,
)


def non_finite_value(training: dict[str, Any]) -> tuple[str, str] | None:
    """(key, why) of a NaN or infinite value: NaN reached TRL as JSON null after a Prefect
    round trip (`--lr nan` was reported as `learning_rate: None`)."""
    for key, value in training.items():
        if isinstance(value, float) and not math.isfinite(value):
            return key, "is not a finite number: give a number (e.g. 5e-6 for a learning rate)"
    return None


def _nothing_to_train(training: dict[str, Any]) -> tuple[str, str] | None:
    """(key, why) of a value that would make a run train nothing, or None."""
    non_finite = non_finite_value(training)
    if non_finite is not None:
        return non_finite
    max_steps = training.get("max_steps", -1)
    if isinstance(max_steps, (int, float)) and (max_steps == 0 or max_steps < -1):
        return "max_steps", "would train nothing: give a positive number of optimizer steps, or -1 for no limit"
    step_limit = isinstance(max_steps, int) and max_steps > 0
    epochs = training.get("num_train_epochs")
    if isinstance(epochs, (int, float)) and epochs <= 0 and not step_limit:
        return "num_train_epochs", "would train nothing: give a positive number of epochs (or a positive max_steps)"
    epochs = training.get("max_epochs")  # Lightning: -1 is no limit, for a run that max_steps ends
    if isinstance(epochs, (int, float)) and epochs < 1 and not (epochs == -1 and step_limit):
        return (
            "max_epochs",
            "would train nothing or never end: give a positive number (or -1 with a positive max_steps)",
        )
    lr = training.get("learning_rate")
    if isinstance(lr, (int, float)) and lr < 0:
        return "learning_rate", "would move the weights away from the optimum: give a positive rate"
    for key in ("per_device_train_batch_size", "gradient_accumulation_steps", "accumulate_grad_batches"):
        v = training.get(key)
        if isinstance(v, (int, float)) and v < 1:
            return key, "must be at least 1"
    return None


def device_capabilities() -> tuple[bool, bool]:
    """(has a CUDA GPU, that GPU supports bf16)."""
    import torch

    cuda = torch.cuda.is_available()
    return cuda, bool(cuda and torch.cuda.is_bf16_supported())


def capabilities_unless_given(cuda: bool | None, bf16_ok: bool | None) -> tuple[bool, bool]:
    """(cuda, bf16_ok) as given, each one left None detected on this machine (`device_capabilities`)."""
    if cuda is None or bf16_ok is None:
        detected = device_capabilities()
        cuda = detected[0] if cuda is None else cuda
        bf16_ok = detected[1] if bf16_ok is None else bf16_ok
    return cuda, bf16_ok


def check_precision(training: dict[str, Any], field: str, cuda: bool, bf16_ok: bool) -> None:
    """The one mixed-precision rule: what the user asked for must run on this machine, or the
    run fails at preflight instead of deep inside torch (or silently in the wrong precision).
    TRL/transformers say it with `bf16`/`fp16`, Lightning with `precision` and `accelerator`."""
    accelerator = str(training.get("accelerator", "")).lower()
    if accelerator in ("gpu", "cuda") and not cuda:
        raise InputError(
            f"{field}.accelerator",
            f"is {training['accelerator']!r} but this machine has no CUDA GPU",
            f"set {field}.accelerator to 'cpu' (or 'auto'), or run this step on a CUDA GPU",
        )
    on_gpu = cuda and accelerator in ("gpu", "cuda", "auto")
    precision = str(training.get("precision", ""))
    if training.get("bf16") or (precision.startswith("bf16") and on_gpu):
        key = "bf16" if training.get("bf16") else "precision"
        if not bf16_ok:
            raise InputError(
                f"{field}.{key}",
                f"is {'true' if key == 'bf16' else repr(training[key])} but this machine has no GPU with bf16 support",
                f"set {field}.{key} to {'false' if key == 'bf16' else repr('32-true')}, or run this step on a GPU "
                "with bf16 (Ampere or newer, e.g. an A100 or H100)",
            )
    if training.get("fp16") and not cuda:
        raise InputError(
            f"{field}.fp16",
            "is true but this machine has no CUDA GPU",
            f"set {field}.fp16 to false, or run this step on a CUDA GPU",
        )
    if precision.startswith("16") and not on_gpu and accelerator != "mps":
        raise InputError(
            f"{field}.precision",
            f"is {training['precision']!r} (fp16) but this step does not run on a CUDA GPU",
            f"set {field}.precision to '32-true' (or 'bf16-mixed'), or accelerator 'gpu' on a CUDA GPU",
        )


def _fields(cls) -> tuple[set[str], dict[str, Any]]:
    """The argument names of `cls` (a dataclass's init fields, else its `__init__` parameters) and their types."""
    if dataclasses.is_dataclass(cls):
        names = {f.name for f in dataclasses.fields(cls) if f.init}
        annotated = cls
    else:
        params = list(inspect.signature(cls.__init__).parameters.values())[1:]
        names = {p.name for p in params if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
        annotated = cls.__init__
    try:
        hints = typing.get_type_hints(annotated)
    except Exception:  # an annotation that does not resolve here: check names only
        hints = {}
    return names, hints


def _plain(value: Any) -> bool:
    return not isinstance(value, enum.Enum) and isinstance(value, (bool, int, float, str, list, dict, type(None)))


def _check_names(training: dict[str, Any], target: TrainingTarget, names: set[str], field: str, cls_name: str):
    for key, why in target.reserved.items():
        if key in training:
            raise InputError(f"{field}.{key}", f"cannot be set: {why}", f"remove {key} from {field}")
    for key in training:
        if key not in names:
            close = difflib.get_close_matches(key, sorted(names), n=3)
            hint = f"did you mean {', '.join(close)}? " if close else ""
            raise InputError(f"{field}.{key}", f"is not an argument of {cls_name}", f"{hint}Remove or rename it")


def _coerced(training: dict[str, Any], hints: dict[str, Any], field: str, cls_name: str) -> dict[str, Any]:
    """`training` with values checked against their declared types; YAML strings become numbers."""
    from pydantic import TypeAdapter, ValidationError

    out: dict[str, Any] = {}
    for key, value in training.items():
        out[key] = value
        if key not in hints:
            continue
        try:
            adapter = TypeAdapter(hints[key])
        except Exception:  # a type pydantic cannot check (a class of its own): the class will
            continue
        try:
            coerced = adapter.validate_python(value)
        except ValidationError as exc:
            raise InputError(
                f"{field}.{key}",
                f"{value!r} has the wrong type ({exc.errors()[0]['msg']})",
                f"{cls_name} expects {hints[key]}",
            ) from None
        if _plain(coerced) and type(coerced) is not type(value) and isinstance(value, str):
            out[key] = coerced  # e.g. YAML 1.1 reads 1e-4 as the string '1e-4'
    return out


@contextmanager
def _quiet():
    """Deprecation notices of aliases the user chose, and Lightning's device lines, stay out of the check."""
    lightning = logging.getLogger("pytorch_lightning")
    level = lightning.level
    lightning.setLevel(logging.WARNING)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            yield
    finally:
        lightning.setLevel(level)


# What torchrun tells a training process; accelerate starts torch.distributed when it sees them.
TORCHRUN_VARIABLES = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK")


@contextmanager
def _as_one_process():
    """The probe builds the class as one process (as preflight does, outside torchrun). Under
    torchrun, building it on CPU started torch.distributed with gloo, and the real config kept
    that group: on GPUs no NCCL, DDP over gloo, and GRPO's reward gather failed (gpu_check)."""
    saved = {k: os.environ.pop(k) for k in TORCHRUN_VARIABLES if k in os.environ}
    try:
        yield
    finally:
        os.environ.update(saved)


def _probe(cls, cls_name: str, target: TrainingTarget, checked: dict[str, Any], defaults, field: str) -> None:
    """Build the class once (on CPU, no mixed precision, one process), so its own cross-field checks apply."""
    with tempfile.TemporaryDirectory() as tmp, _quiet(), _as_one_process():
        try:
            cls(**{target.dir_arg: tmp}, **{**(defaults or {}), **checked, **target.probe})
        except (TypeError, ValueError) as exc:
            keys = ", ".join(sorted(checked)) or "the defaults"
            raise InputError(field, f"{cls_name} rejects {keys}: {exc}", f"fix {field}") from None


def check_training_args(
    training: dict[str, Any],
    target: str | TrainingTarget,
    field: str,
    defaults: dict[str, Any] | None = None,
    *,
    machine: tuple[bool, bool] | None = None,
) -> dict[str, Any]:
    """`training` checked against `target` (a TRL/transformers dataclass as "module:Class", or a
    `TrainingTarget` such as `LIGHTNING_TRAINER`); returns it with YAML strings coerced to the
    declared types. `defaults` are the trainer's own values under the user's (so the class's
    cross-field checks see what will run). `machine` is (cuda, bf16_ok) of the machine the step
    runs on; None leaves mixed precision unchecked (a machine-independent check). Raises
    InputError naming `{field}.{key}`."""
    target = trl_target(target) if isinstance(target, str) else target
    training = training or {}
    bad = non_finite_value(training)  # before the class is imported: seconds of torch for a typo
    if bad is not None:
        raise InputError(f"{field}.{bad[0]}", f"{training[bad[0]]!r} {bad[1]}", f"fix {field}.{bad[0]}")
    cls = load_object(target.ref)
    cls_name = f"{cls.__module__.split('.')[0]}.{cls.__name__}"
    names, hints = _fields(cls)
    _check_names(training, target, names, field, cls_name)
    out = _coerced(training, hints, field, cls_name)
    bad = _nothing_to_train(out)
    if bad is not None:
        key, why = bad
        raise InputError(f"{field}.{key}", f"{out[key]!r} {why}", f"fix {field}.{key}")
    if machine is not None:
        check_precision(out, field, *machine)
    _probe(cls, cls_name, target, out, defaults, field)
    return out


def build_training_config(
    target: str,
    settings,
    output_dir: str | os.PathLike,
    defaults_for,
    *,
    cuda: bool | None,
    bf16_ok: bool | None,
    field: str,
    fixed: dict[str, Any] | None = None,
):
    """The config object (`target`, a TRL/transformers dataclass such as "trl:SFTConfig") of a
    training step on this machine (capabilities detected unless given): `defaults_for(cuda,
    bf16_ok)`, under the user's `settings.training` (checked by `check_training_args`, errors
    naming `field`), under `fixed` (values the trainer sets whatever the user says)."""
    cuda, bf16_ok = capabilities_unless_given(cuda, bf16_ok)
    defaults = {**defaults_for(cuda, bf16_ok), **(fixed or {})}
    user = check_training_args(dict(settings.training), target, field, defaults, machine=(cuda, bf16_ok))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # deprecation notices of aliases the user chose
        return load_object(target)(output_dir=os.fspath(output_dir), **{**defaults, **user, **(fixed or {})})


def check_by_building(build, settings, field: str) -> None:
    """A trainer's preflight: build its config once in a throw-away folder (`build(settings,
    folder, field=...)`), so `training` is checked against the class and this machine."""
    with tempfile.TemporaryDirectory() as tmp:
        build(settings, tmp, field=f"{field}.training")
