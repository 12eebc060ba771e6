"""`dojoflow grpo train|evaluate`'s inputs as settings, and every check before a flow starts
(flows/cli/grpo.py prints; this decides). Nothing here imports TRL until `preflight_inputs`'s
last step, and nothing here writes: a bad input is an InputError naming the option and the fix.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from storage.errors import DojoflowError, InputError

from .config import GRPOSettings
from .theorem_files import merge_fields

# option -> field of GRPOSettings.training (lean-grpo's names on the left)
TRAINING_OPTIONS = {
    "num_generations": "num_generations",
    "lr": "learning_rate",
    "epochs": "num_train_epochs",
    "batch_size": "per_device_train_batch_size",
    "max_steps": "max_steps",
}


def backend_option(value: str | None) -> dict | None:
    """`--backend`: a backend kind (`repl`) or a JSON object of BackendSettings."""
    if value is None:
        return None
    if value.strip().startswith("{"):
        try:
            return json.loads(value)
        except json.JSONDecodeError as e:
            raise InputError(
                "--backend", f"is not valid JSON ({e.msg})", 'e.g. --backend \'{"kind": "repl"}\''
            ) from None
    return {"kind": value}


def json_object_option(name: str, value: str | None) -> dict:
    """An option holding a JSON object (`--algo-config`); none given: {}."""
    if value is None:
        return {}
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError as e:
        raise InputError(name, f"is not valid JSON ({e.msg})", f"e.g. {name} '{{\"dpo_coef\": 0.5}}'") from None
    if not isinstance(parsed, dict):
        raise InputError(name, "must be a JSON object", f"e.g. {name} '{{\"dpo_coef\": 0.5}}'")
    return parsed


def train_fields(file_fields: dict, options: dict[str, Any]) -> dict:
    """GRPOSettings fields of `dojoflow grpo train`: the `--config` file's, then the options
    given (None: not given), which win. `options` holds algorithm, model, reward, algo_config,
    lora_rank, backend and the keys of TRAINING_OPTIONS."""
    flags: dict = {"mode": "proof"}
    for key, field in (("algorithm", "algorithm"), ("model", "model"), ("reward", "reward_preset")):
        if options.get(key) is not None:
            flags[field] = options[key]
    if options.get("algo_config") is not None:
        flags["algorithm_config"] = json_object_option("--algo-config", options["algo_config"])
    training = {field: options[o] for o, field in TRAINING_OPTIONS.items() if options.get(o) is not None}
    if training:
        flags["training"] = training
    if options.get("lora_rank") is not None:
        flags["lora"] = {"r": options["lora_rank"]}
    if options.get("backend") is not None:
        flags["backend"] = backend_option(options["backend"])
    if options.get("processes") is not None:
        flags["launch"] = {"processes": options["processes"]}  # torchrun (tasks/trainers/launch.py)
    fields = merge_fields({"mode": "proof"}, file_fields, flags)
    n = fields.get("training", {}).get("num_generations")
    if n is not None and "per_device_train_batch_size" not in fields.get("training", {}):
        fields["training"]["per_device_train_batch_size"] = n  # lean-grpo's batch is in theorems; one group
    return fields


def evaluate_fields(k: int, max_new_tokens: int, temperature: float, backend: str | None) -> dict:
    """GRPOSettings fields of `dojoflow grpo evaluate`."""
    fields = {"mode": "proof", "evaluation": {"k": k, "max_new_tokens": max_new_tokens, "temperature": temperature}}
    if backend is not None:
        fields["backend"] = backend_option(backend)
    return fields


def settings_from_fields(fields: dict) -> GRPOSettings:
    """GRPOSettings from the merged fields; a refused value is an InputError naming the field.
    Cheap (no TRL import): `preflight_inputs` comes after every other input check."""
    try:
        return GRPOSettings.model_validate(fields)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(x) for x in first["loc"]) or "settings"
        message = first["msg"].removeprefix("Value error, ").rstrip(".")
        if message.startswith(f"{where}."):  # a check that names the field and its fix itself
            raise DojoflowError(f"{message}.") from e
        problem, _, fix = message.rpartition(". ") if ". " in message else (message, "", "")
        raise InputError(where, problem, f"{fix or 'Fix that option (dojoflow grpo train --help)'}.") from e


def preflight_inputs(settings: GRPOSettings, theorems: list, home: Path, checkpoint: Path | None = None) -> None:
    """Every theorem checkable by the backend, the backend reachable, the model (or the
    checkpoint to evaluate) usable, then the settings against TRL (seconds of imports, so
    last). Nothing is created, not even an empty store."""
    from storage.store import Store
    from tasks.lean import preflight as backend_preflight
    from tasks.lean.config import BackendSettings
    from tasks.trainers.preflight import check_model_reference, preflight

    from .theorem_files import checkable_specs

    store = Store.open(home, create=False) if (home / "store").exists() else None
    specs = checkable_specs(settings, theorems, store)
    if checkpoint is None:
        check_model_reference(settings.model, "--model")
    else:
        from tasks.generate.checkpoint import check_causal_lm

        check_causal_lm(checkpoint)
    backend_preflight(BackendSettings.model_validate(settings.backend), specs)
    preflight("grpo", settings)


def train_output(option: Path | None, from_config: str | None, home: Path, settings: GRPOSettings) -> Path:
    """The checkpoint folder of `dojoflow grpo train`: `-o`, else the `--config` file's
    `output_dir`, else `<home>/grpo/<algorithm>`; one it would destroy is refused
    (tasks/grpo/output_folder.py), named as the user gave it."""
    from .output_folder import check_output_folder

    shown = "-o" if option else "output_dir" if from_config else "-o (default)"
    return check_output_folder(option or from_config or home / "grpo" / settings.algorithm, home, shown)
