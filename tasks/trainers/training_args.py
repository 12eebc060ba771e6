"""The one check of a trainer's pass-through `training:` arguments (SFT, progress, GRPO).

A trainer's `training:` dict goes unchanged into a TRL/transformers config dataclass
(`trl.SFTConfig`, `transformers.TrainingArguments`, `trl.GRPOConfig`). Before any run
(preflight) and again when the config is built, `check_training_args` checks it
against that class, with one rule for every trainer:

- keys Dojoflow sets itself (`RESERVED_KEYS`) are refused, saying why;
- a key the class does not have is refused, with the closest names;
- a value of the wrong type is refused; a YAML string such as '1e-4' becomes a number;
- a value that is not a finite number (`nan`, `inf`) is refused, naming it;
- a value that would train nothing (`num_train_epochs` <= 0 without `max_steps`,
  `max_steps` 0 or below -1, a negative learning rate, a batch size < 1) is refused;
- the class itself is built once (mixed precision off, on CPU, so that a laptop and
  the GPU machine agree), so its own cross-field checks apply.

Errors are `InputError`s naming `<field>.<key>`, e.g. `trainers.sft.training.learning_rate`.
Importing this module imports no torch; checking imports the target class.
"""

from __future__ import annotations

import dataclasses
import difflib
import enum
import math
import tempfile
import typing
import warnings
from typing import Any

from storage.errors import InputError

from .base import load_object

RESERVED_KEYS: dict[str, str] = {
    "output_dir": "Dojoflow keeps Trainer checkpoints in the step's work folder, so that a rerun resumes from them",
    "resume_from_checkpoint": "Dojoflow resumes from the latest complete checkpoint in the work folder by itself",
    "overwrite_output_dir": "the work folder is managed by Dojoflow",
}


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
    epochs = training.get("num_train_epochs")
    if isinstance(epochs, (int, float)) and epochs <= 0 and not (isinstance(max_steps, int) and max_steps > 0):
        return "num_train_epochs", "would train nothing: give a positive number of epochs (or a positive max_steps)"
    lr = training.get("learning_rate")
    if isinstance(lr, (int, float)) and lr < 0:
        return "learning_rate", "would move the weights away from the optimum: give a positive rate"
    for key in ("per_device_train_batch_size", "gradient_accumulation_steps"):
        v = training.get(key)
        if isinstance(v, (int, float)) and v < 1:
            return key, "must be at least 1"
    return None


def _fields(cls) -> tuple[set[str], dict[str, Any]]:
    names = {f.name for f in dataclasses.fields(cls) if f.init}
    try:
        hints = typing.get_type_hints(cls)
    except Exception:  # an annotation that does not resolve here: check names only
        hints = {}
    return names, hints


def _plain(value: Any) -> bool:
    return not isinstance(value, enum.Enum) and isinstance(value, (bool, int, float, str, list, dict, type(None)))


def check_training_args(
    training: dict[str, Any], target: str, field: str, defaults: dict[str, Any] | None = None
) -> dict[str, Any]:
    """`training` checked against the dataclass `target` ("module:Class"); returns it with
    YAML strings coerced to the declared types. `defaults` are the trainer's own values
    under the user's (so the class's cross-field checks see what will run).
    Raises InputError naming `{field}.{key}`."""
    from pydantic import TypeAdapter, ValidationError

    if not training:
        training = {}
    bad = non_finite_value(training)  # before the class is imported: seconds of torch for a typo
    if bad is not None:
        raise InputError(f"{field}.{bad[0]}", f"{training[bad[0]]!r} {bad[1]}", f"fix {field}.{bad[0]}")
    cls = load_object(target)
    cls_name = f"{cls.__module__.split('.')[0]}.{cls.__name__}"
    for key, why in RESERVED_KEYS.items():
        if key in training:
            raise InputError(f"{field}.{key}", f"cannot be set: {why}", f"remove {key} from {field}")
    names, hints = _fields(cls)
    for key in training:
        if key not in names:
            close = difflib.get_close_matches(key, sorted(names), n=3)
            hint = f"did you mean {', '.join(close)}? " if close else ""
            raise InputError(f"{field}.{key}", f"is not an argument of {cls_name}", f"{hint}Remove or rename it")
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
    bad = _nothing_to_train(out)
    if bad is not None:
        key, why = bad
        raise InputError(f"{field}.{key}", f"{out[key]!r} {why}", f"fix {field}.{key}")
    probe = {**(defaults or {}), **out, "bf16": False, "fp16": False, "use_cpu": True}
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # deprecation notices of aliases the user chose
        try:
            cls(output_dir=tmp, **probe)
        except (TypeError, ValueError) as exc:
            keys = ", ".join(sorted(out)) or "the defaults"
            raise InputError(field, f"{cls_name} rejects {keys}: {exc}", f"fix {field}") from None
    return out
