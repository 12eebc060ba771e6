"""The sample data that ships with Dojoflow: three small Lean 4 repositories of
different difficulty (`ListLemmas`, `LogicPuzzles`, `NatBasics`) and their traced
form in the LeanDojo Benchmark layout. `dojoflow run` trains on them by default,
with no network and no Lean toolchain.

`lean/<Repo>/` holds the Lean sources, `leandojo/<Repo>/` the exports; both are
written by `storage/sample/generate.py` (`.venv/bin/python -m storage.sample.generate`)
and kept in the tree.
"""

from __future__ import annotations

from pathlib import Path

SAMPLE_ROOT = Path(__file__).resolve().parent

# Alphabetical, which is not the curriculum order: ordering is the curriculum's job.
SAMPLE_REPOS = ("ListLemmas", "LogicPuzzles", "NatBasics")


def sample_export_dirs() -> list[Path]:
    """The LeanDojo export folder of each sample repository, alphabetically."""
    return [SAMPLE_ROOT / "leandojo" / name for name in SAMPLE_REPOS]


def sample_lean_dirs() -> list[Path]:
    """The Lean source folder (lakefile, toolchain, `.lean` files) of each sample repository."""
    return [SAMPLE_ROOT / "lean" / name for name in SAMPLE_REPOS]
