"""The retriever's settings before and after `training:` and `optimizer:` (one move, three rules).

Until this layout the retriever had its Lightning Trainer and AdamW arguments as flat
settings (`lr`, `max_epochs`, `precision`, ...). `MOVED` says where each one went.

- A config (YAML, the Prefect form, `--set`) that still uses a flat key is refused with
  one line naming the key and its new place (`check_no_moved_keys`): two spellings of one
  setting would leave the question which one wins, and every other trainer's settings
  refuse unknown keys too.
- A checkpoint written before the move records its settings flat in `dojoflow_model.json`;
  `upgrade_stored` reads them into this layout, so old checkpoints keep loading.
- A checkpoint id hashes the settings that decide the weights; `flat_identity` gives the
  id the flat layout, with Dojoflow's defaults filled in, so that identical settings keep
  their ids and a store's published checkpoints are found again (no migration needed).
"""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter, ValidationError

# flat key -> (section, key)
MOVED: dict[str, tuple[str, str]] = {
    "lr": ("optimizer", "lr"),
    "weight_decay": ("optimizer", "weight_decay"),
    "warmup_steps": ("optimizer", "warmup_steps"),
    "accelerator": ("training", "accelerator"),
    "devices": ("training", "devices"),
    "strategy": ("training", "strategy"),
    "precision": ("training", "precision"),
    "max_epochs": ("training", "max_epochs"),
    "max_steps": ("training", "max_steps"),
    "accumulate_grad_batches": ("training", "accumulate_grad_batches"),
    "gradient_clip_val": ("training", "gradient_clip_val"),
    "log_every_n_steps": ("training", "log_every_n_steps"),
}

# The Trainer arguments that were part of the checkpoint id when they were flat settings,
# with the types those settings had (a YAML `gradient_clip_val: 1` was the float 1.0).
FLAT_ID_TYPES: dict[str, Any] = {
    "accelerator": str,
    "devices": int | str,
    "strategy": str,
    "precision": str,
    "max_epochs": int,
    "max_steps": int,
    "accumulate_grad_batches": int,
    "gradient_clip_val": float | None,
}


def check_no_moved_keys(data: Any) -> None:
    """Raise ValueError naming the first flat key of the old layout in `data`, and its new place."""
    if not isinstance(data, dict):
        return
    for old, (section, key) in MOVED.items():
        if old in data:
            raise ValueError(
                f"`{old}` moved to `{section}.{key}`: write `{section}: {{{key}: {data[old]!r}}}` "
                f"(the retriever's Lightning Trainer arguments are under `training:`, AdamW's under `optimizer:`)"
            )


def upgrade_stored(saved: dict, fields) -> dict:
    """Settings recorded by a checkpoint (flat or current layout) in the current layout, keeping
    only the fields in `fields` (a checkpoint of an older version may carry retired ones)."""
    data = dict(saved)
    sections = {"optimizer": dict(data.get("optimizer") or {}), "training": dict(data.get("training") or {})}
    for old, (section, key) in MOVED.items():
        if old in data:
            sections[section].setdefault(key, data.pop(old))
    data.update(sections)
    return {k: v for k, v in data.items() if k in fields}


def _as_flat_type(key: str, value: Any) -> Any:
    try:
        return TypeAdapter(FLAT_ID_TYPES[key]).validate_python(value)
    except ValidationError:  # a value the flat setting did not allow (e.g. devices [0, 1]): as given
        return value


def flat_identity(identity: dict, defaults: dict[str, Any]) -> dict:
    """`identity` (the current layout, bookkeeping already left out) in the flat layout: the
    optimizer's fields and the formerly flat Trainer arguments (user's, else `defaults`) at the
    top; other Trainer arguments the user set stay under `training`, absent when there are none."""
    out = {k: v for k, v in identity.items() if k not in ("optimizer", "training")}
    out.update(identity.get("optimizer") or {})
    training = dict(identity.get("training") or {})
    for key in FLAT_ID_TYPES:
        out[key] = _as_flat_type(key, training.pop(key, defaults[key]))
    if training:
        out["training"] = training
    return out
