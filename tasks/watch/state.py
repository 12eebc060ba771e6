"""The nightly state file: per watched repository, the last commit a retraining run finished with.

`<DOJOFLOW_HOME>/nightly/state.json` is written atomically (storage/atomic.py) and only
after that run succeeded, so a failed night is retried the next night.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from storage.atomic import write_json
from storage.errors import InputError

from .config import WatchedRepo

STATE_VERSION = 1


@dataclass(frozen=True)
class Processed:
    """What the state file keeps for one watched repository."""

    commit: str
    processed_at: str
    run_id: str | None = None


@dataclass(frozen=True)
class NightlyState:
    """The last commit processed per watched repository (keyed by `WatchedRepo.key`)."""

    repositories: dict[str, Processed]

    def commit_of(self, repo: WatchedRepo) -> str | None:
        p = self.repositories.get(repo.key)
        return None if p is None else p.commit


def state_path(home: str | os.PathLike) -> Path:
    return Path(home) / "nightly" / "state.json"


def load_state(home: str | os.PathLike) -> NightlyState:
    """The state under `home` (an empty one if there is none yet)."""
    path = state_path(home)
    if not path.exists():
        return NightlyState({})
    try:
        raw = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise InputError(
            path,
            f"is not valid JSON ({e})",
            "delete it to start over (every watched repository is then retrained once)",
        ) from e
    if (
        not isinstance(raw, dict)
        or raw.get("version") != STATE_VERSION
        or not isinstance(raw.get("repositories"), dict)
    ):
        raise InputError(
            path,
            f"is not a nightly state file of version {STATE_VERSION}",
            "delete it to start over (every watched repository is then retrained once)",
        )
    repos = {}
    for key, r in raw["repositories"].items():
        repos[key] = Processed(commit=r["commit"], processed_at=r["processed_at"], run_id=r.get("run_id"))
    return NightlyState(repos)


def record_processed(
    home: str | os.PathLike, processed: list[tuple[WatchedRepo, str]], run_id: str | None = None
) -> NightlyState:
    """Add `(repo, commit)` pairs to the state and write it atomically; returns the new state.

    Call it only once the run over these commits has succeeded.
    """
    state = load_state(home)
    now = datetime.now(UTC).isoformat(timespec="seconds")
    repos = dict(state.repositories)
    for repo, commit in processed:
        repos[repo.key] = Processed(commit=commit, processed_at=now, run_id=run_id)
    doc = {
        "version": STATE_VERSION,
        "repositories": {
            k: {"commit": p.commit, "processed_at": p.processed_at, "run_id": p.run_id} for k, p in repos.items()
        },
    }
    write_json(state_path(home), doc)
    return NightlyState(repos)
