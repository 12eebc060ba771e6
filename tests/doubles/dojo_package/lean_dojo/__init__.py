"""A test double of the `lean_dojo` package (4.20.0): the interactive part only (`Dojo`
and its results), answering from the sample's transitions (tests/doubles/lean_process/world.py).

`tests/doubles/dojo.py` copies this package into a test's folder and puts that folder
on the Dojo worker's PYTHONPATH, the same boundary as the tracing tests' double. Every
`run_tac` is logged to `received.jsonl` beside the package.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from storage.sample import SAMPLE_ROOT
from tests.doubles.lean_process.world import CRASH, HANG, NO_GOALS, SORRY, LeanWorld, norm

__version__ = "4.20.0"
_LOG = Path(__file__).resolve().parents[1] / "received.jsonl"
_WORLD: LeanWorld | None = None


def _world() -> LeanWorld:
    global _WORLD
    if _WORLD is None:
        _WORLD = LeanWorld(SAMPLE_ROOT)
    return _WORLD


class DojoInitError(Exception):
    pass


class DojoCrashError(Exception):
    pass


class DojoTacticTimeoutError(Exception):
    pass


@dataclass(frozen=True)
class LeanGitRepo:
    url: str
    commit: str


@dataclass(frozen=True)
class Theorem:
    repo: LeanGitRepo
    file_path: Path
    full_name: str


@dataclass(frozen=True)
class TacticState:
    pp: str
    id: int = field(compare=False)
    message: str | None = field(default=None, compare=False)


@dataclass(frozen=True)
class ProofFinished:
    tactic_state_id: int
    message: str | None = field(default=None, compare=False)


@dataclass(frozen=True)
class ProofGivenUp:
    pass


@dataclass(frozen=True)
class LeanError:
    error: str


class Dojo:
    def __init__(
        self, entry: Theorem, timeout: int = 600, additional_imports: list | None = None, build_deps: bool = True
    ):
        self.entry = entry
        self.timeout = timeout
        self.next_id = 0

    def __enter__(self):
        t = _world().by_name.get(self.entry.full_name)
        if t is None or t.initial is None:
            raise DojoInitError(f"the double cannot start {self.entry.full_name}")
        self.theorem = t
        return self, TacticState(t.initial, self._id())

    def __exit__(self, *exc):
        return False

    def _id(self) -> int:
        self.next_id += 1
        return self.next_id - 1

    def run_tac(self, state: TacticState, tactic: str):
        with _LOG.open("a", encoding="utf-8") as f:
            f.write(
                json.dumps({"pid": os.getpid(), "cwd": os.getcwd(), "env_keys": sorted(os.environ), "tactic": tactic})
                + "\n"
            )
        out = _world().run_tactics(self.theorem, state.pp, tactic)
        if out.special == CRASH:
            os._exit(137)
        if out.special == HANG:
            while True:
                time.sleep(3600)
        if SORRY in norm(tactic).split() or "sorryAx" in out.axioms:
            return ProofGivenUp()
        if out.state is None:
            return LeanError(out.error)
        if norm(out.state) == NO_GOALS:
            return ProofFinished(self._id(), None)
        return TacticState(out.state, self._id())
