"""Where `dojoflow grpo train -o OUT` may write. Training replaces OUT whole (an atomic
swap: the old folder is moved aside and deleted), so OUT must be new, empty, or a folder
a previous `dojoflow grpo train` wrote; never the store, a checkpoint, or anything else.
(Pointed at the store's data folder, a run once exited 0 with the store destroyed; pointed
at an SFT checkpoint, it replaced the checkpoint and its manifest.)"""

from __future__ import annotations

import json
from pathlib import Path

from storage.errors import InputError
from storage.paths import check_folder_path
from tasks.checkpoints import MANIFEST as CHECKPOINT_MANIFEST
from tasks.models.loading import MODEL_INFO

FIX = "give -o a new or empty folder, or one a previous `dojoflow grpo train` wrote"


def _is_inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def previous_output(path: Path) -> bool:
    """True for a folder `dojoflow grpo train` wrote: its model info names the grpo trainer
    and the theorem file's count (`train_on_theorem_file`'s provenance), and it holds no
    curriculum checkpoint manifest."""
    try:
        info = json.loads((path / MODEL_INFO).read_text())
    except (OSError, ValueError):
        return False
    return (
        isinstance(info, dict)
        and info.get("trainer") == "grpo"
        and "theorem_count" in info
        and not (path / CHECKPOINT_MANIFEST).exists()
    )


def check_output_folder(out: str | Path, home: str | Path, shown: str = "-o") -> Path:
    """`out` resolved, if training may replace it; else an InputError naming why."""
    resolved = check_folder_path(out, f"{shown} {out}", FIX)
    home = Path(home).resolve()
    for name, what in (
        ("store", "the Dojoflow store"),
        ("checkpoints", "the Dojoflow checkpoints"),
        ("prefect", "Prefect's database"),
    ):
        kept = home / name
        if _is_inside(resolved, kept) or _is_inside(kept, resolved):
            raise InputError(f"{shown} {out}", f"holds or is inside {what} ({kept}), which training would replace", FIX)
    if not resolved.is_dir():
        return resolved
    if (resolved / CHECKPOINT_MANIFEST).exists():
        raise InputError(f"{shown} {out}", "is a Dojoflow checkpoint, which training would replace", FIX)
    entries = next(resolved.iterdir(), None)
    if entries is not None and not previous_output(resolved):
        raise InputError(f"{shown} {out}", "is a folder holding other files, which training would replace", FIX)
    return resolved
