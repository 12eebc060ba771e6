"""lean-dojo's real `Dojo` against a double of the Lean process only.

`make_dojo_lean(folder, repos)` sets up what the real `Dojo` (lean-dojo 4.20.0, installed,
unmodified) needs from the machine, and nothing more:
- a fake `lake` (put `bin` on PATH): `lake env lean ... FILE` runs tests/doubles/dojo_lean/lean4repl.py,
  the double of Lean running lean-dojo's `Lean4Repl` on the file the Dojo wrote;
- a lean-dojo cache (`CACHE_DIR`) holding each sample repository as Dojoflow's tracing leaves
  it (tasks/lean/dojo_repo.py): `gitpython-<name>-<commit>/<name>/` with the sources,
  `Lean4Repl.lean` and the `*.ast.json` files (tests/doubles/dojo_lean/ast_json.py), and
  `repos/gitpython-<name>-<commit>/<name>/`, a git copy.
What the double received is logged to `log` (one JSON line per lake call and per request).
"""

from __future__ import annotations

import json
import shutil
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from storage.sample import SAMPLE_ROOT

from ..lean_process.faults import write_rules
from .ast_json import write_traced_files

FRONTEND = Path(__file__).resolve().parent / "lean4repl.py"


@dataclass(frozen=True)
class DojoLean:
    bin_dir: Path  # holds the fake `lake`
    cache_dir: Path  # lean-dojo's CACHE_DIR
    log: Path
    control: Path  # the fault-control file (tests/doubles/lean_process/faults.py)

    def faults(self, *rules: dict) -> None:
        """Replace the fault rules (`{"when", "do", "seconds", "times"}`, lean_process/faults.py)."""
        write_rules(self.control, list(rules))

    def events(self) -> list[dict]:
        """Every lake call (`argv`) and request (`request`), with pid, cwd and environment names."""
        return [json.loads(x) for x in self.log.read_text().splitlines()] if self.log.exists() else []

    def tactics(self) -> list[str]:
        return [r["request"]["cmd"] for r in self.events() if "request" in r]

    def received(self) -> str:
        """All request text the Lean processes received, one request a line."""
        return "\n".join(json.dumps(r["request"], ensure_ascii=False) for r in self.events() if "request" in r)

    def sandbox(self, **extra) -> dict:
        """`backend.sandbox` settings under which the Dojo worker and this double run in bubblewrap:
        Python and this checkout read-only, the double's folder (log, faults, cache) writable."""
        checkout = str(FRONTEND.parents[3])
        return {
            "read_only_paths": [sys.prefix, sys.base_prefix, checkout],
            "writable_paths": [str(self.log.parent)],
            **extra,
        }

    def pids(self) -> list[int]:
        """The Lean processes started, in order."""
        return [r["pid"] for r in self.events() if "argv" in r]


def _sample_commit(name: str) -> str:
    rows = json.loads((SAMPLE_ROOT / "leandojo" / name / "random" / "train.json").read_text())
    return rows[0]["commit"]


def add_traced_repo(cache_dir: Path, name: str, commit: str | None = None) -> Path:
    """Put sample repository `name` into the cache, traced at `commit` (default: the sample's)."""
    commit = commit or _sample_commit(name)
    traced = cache_dir / f"gitpython-{name}-{commit}" / name
    local = cache_dir / "repos" / f"gitpython-{name}-{commit}" / name
    shutil.copytree(SAMPLE_ROOT / "lean" / name, local)
    subprocess.run(["git", "init", "-q", str(local)], check=True)
    shutil.copytree(local, traced)
    # lean-dojo's trace copies Lean4Repl.lean into the repository (Dojo asserts it is there, dojo.py:247-250)
    import importlib.util

    spec = importlib.util.find_spec("lean_dojo")
    shutil.copy(Path(spec.origin).parent / "interaction" / "Lean4Repl.lean", traced / "Lean4Repl.lean")
    write_traced_files(traced)
    return traced


def make_dojo_lean(folder: Path, repos: tuple[str, ...] = ("NatBasics", "ListLemmas", "LogicPuzzles")) -> DojoLean:
    folder = Path(folder)
    bin_dir, cache_dir, log = folder / "bin", folder / "lean_dojo_cache", folder / "dojo-double.jsonl"
    control = folder / "faults.json"
    bin_dir.mkdir(parents=True, exist_ok=True)
    lake = bin_dir / "lake"
    # -S: no `site`; the double imports only the standard library and this checkout (lean4repl.py)
    lake.write_text(
        f'#!/bin/sh\nDOJO_DOUBLE_LOG="{log}" DOJO_DOUBLE_CONTROL="{control}" exec "{sys.executable}" -S "{FRONTEND}" "$@"\n'
    )
    lake.chmod(lake.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    for name in repos:
        add_traced_repo(cache_dir, name)
    return DojoLean(bin_dir, cache_dir, log, control)
