"""lean-dojo as both the tracing step (tasks/tracing/) and the leandojo backend run it: the
release Dojoflow is written against and the check that it is installed (`check_lean_dojo`,
without importing it), the `LeanGitRepo` built without lean-dojo's network calls
(`bare_repo`), and, in lean-dojo's cache, the repository that Dojoflow's tracing built, so that
lean-dojo's `Dojo` opens it instead of tracing again (hours) or asking GitHub.

Dojoflow traces a local checkout (`LeanGitRepo(<work>/checkouts/<sha12>/<name>, commit)`,
tasks/tracing/worker.py), which lean-dojo 4.20.0 files in its cache (`CACHE_DIR`) as
  - `gitpython-<name>-<commit>/<name>/`: the traced and built repository
    (`_format_cache_dirname`, data_extraction/lean.py:121-128; `get_traced_repo_path`,
    data_extraction/trace.py:207-217), and
  - `repos/gitpython-<name>-<commit>/<name>/`: a git copy of the checkout (lean.py:554-564).
A theorem's GitHub URL would map to `<user>-<name>-<commit>` instead, and `LeanGitRepo`'s
constructor would ask the GitHub API for it (lean.py:550-551): a cache miss, then a trace.
So the Dojo worker builds its `LeanGitRepo` from the local copy found here, without
running lean-dojo's constructor (no git, no network), as tracing's offline dependencies do.

This module does not import lean-dojo.
"""

from __future__ import annotations

import importlib.machinery
import importlib.metadata
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from storage.errors import DojoflowError, InputError, ToolchainMissingError

LEAN_DOJO_VERSION = "4.20.0"
"""The lean-dojo release this package is written against (pyproject's `lean` extra pins it)."""

TRACE_FIX = (
    "trace it first (`dojoflow trace URL --commit SHA`) and set backend.leandojo.cache_dir to lean-dojo's "
    "cache of that trace: <dojoflow home>/traces/work/lean_dojo_cache"
)


@dataclass(frozen=True)
class TracedRepo:
    """Where the Dojo finds a traced repository: the git copy it names the repository by
    (lean-dojo derives the cache folder from its path and the commit) and the traced folder."""

    local_url: str
    traced_dir: Path
    lean_toolchain: str


def _name(url: str) -> str:
    return url.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git")


def find_traced_repo(cache_dir: Path, url: str, commit: str) -> TracedRepo:
    """The traced repository of `url` at `commit` in lean-dojo's cache `cache_dir`; an
    InputError naming both and the fix when tracing did not leave it there."""
    cache_dir = Path(cache_dir).expanduser()
    names = [_name(url)] + sorted(
        p.name.removeprefix("gitpython-").removesuffix(f"-{commit}") for p in cache_dir.glob(f"gitpython-*-{commit}")
    )
    for name in dict.fromkeys(names):
        traced = cache_dir / f"gitpython-{name}-{commit}" / name
        local = cache_dir / "repos" / f"gitpython-{name}-{commit}" / name
        if traced.is_dir() and (local / ".git").exists():
            toolchain = traced / "lean-toolchain"
            return TracedRepo(str(local), traced, toolchain.read_text().strip() if toolchain.exists() else "")
    raise InputError(
        f"{url}@{commit[:12]}",
        f"has no traced repository in lean-dojo's cache {cache_dir} (looked for gitpython-<name>-{commit[:12]}…); "
        "the Dojo would trace it again, for hours",
        TRACE_FIX,
    )


class LeanDojoMissingError(ToolchainMissingError):
    """The Python package lean-dojo cannot be imported by the interpreter that traces."""

    def __init__(self, searched: list[str] | None = None):
        self.program = "lean_dojo"
        self.searched = list(searched or [])
        DojoflowError.__init__(
            self,
            "the Python package lean-dojo (module `lean_dojo`) is not installed, and tracing "
            "runs it. Install the extra: `pip install -e '.[lean]'` in a Dojoflow checkout, "
            "or `pip install 'dojoflow[lean]'` (it pins lean-dojo==4.20.0).",
        )


class ToolchainError(DojoflowError):
    """A program is on PATH but unusable: `--version` fails, is unreadable, or too old."""

    def __init__(self, program: str, problem: str, fix: str):
        self.program = program
        self.problem = problem
        self.fix = fix
        super().__init__(f"`{program}`: {problem}. {fix}")


def check_lean_dojo(pythonpath: Sequence[str | Path] = ()) -> str | None:
    """lean-dojo's version if it is installed (in `pythonpath` or sys.path), without importing it."""
    paths = [str(p) for p in pythonpath] + [p for p in sys.path]
    if importlib.machinery.PathFinder.find_spec("lean_dojo", paths) is None:
        raise LeanDojoMissingError(paths)
    dists = list(importlib.metadata.distributions(name="lean-dojo", path=paths))
    if not dists:
        return None  # a source checkout on the path: the tracing subprocess checks __version__
    version = dists[0].version
    if not is_supported_lean_dojo(version):
        raise ToolchainError(
            "lean-dojo",
            f"version {version} is installed, and Dojoflow's tracing is written against "
            f"lean-dojo {LEAN_DOJO_VERSION} (it reaches into its internals)",
            f"install that release: `pip install 'lean-dojo=={LEAN_DOJO_VERSION}'`",
        )
    return version


def is_supported_lean_dojo(version: str) -> bool:
    return version.split(".")[:2] == LEAN_DOJO_VERSION.split(".")[:2]


def bare_repo(ld_lean, url: str, commit: str, lean_version: str, repo_type):
    """A LeanGitRepo with the fields lean-dojo's __post_init__ would set, without its network calls."""
    repo = object.__new__(ld_lean.LeanGitRepo)
    for name, value in (
        ("url", url),
        ("commit", commit),
        ("repo", None),
        ("lean_version", lean_version),
        ("repo_type", repo_type),
    ):
        object.__setattr__(repo, name, value)
    return repo
