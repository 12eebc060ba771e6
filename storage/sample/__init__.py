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


def write_sample_repositories(out: Path) -> list[Path]:
    """Copy the sample's Lean sources to `out/<Repo>/`, each made its own git repository with
    one commit, so that a user with a Lean toolchain can trace them (`dojoflow trace`):
    lean-dojo traces a commit of a repository root, and inside Dojoflow's tree they are
    neither. The commit is made with a fixed author and date, so its hash is the same on
    every machine."""
    import shutil
    import subprocess

    out = Path(out).resolve()
    made = []
    for src in sample_lean_dirs():
        dest = out / src.name
        if dest.exists():
            raise FileExistsError(f"{dest} already exists: choose another folder, or remove it")
        shutil.copytree(src, dest)
        env = {
            "GIT_AUTHOR_NAME": "Dojoflow sample",
            "GIT_AUTHOR_EMAIL": "sample@dojoflow.invalid",
            "GIT_COMMITTER_NAME": "Dojoflow sample",
            "GIT_COMMITTER_EMAIL": "sample@dojoflow.invalid",
            "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
            "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": str(dest),
            "GIT_CONFIG_NOSYSTEM": "1",
        }
        for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", f"{src.name} sample"]):
            subprocess.run(["git", *args], cwd=dest, env=env, check=True, capture_output=True)
        made.append(dest)
    return made
