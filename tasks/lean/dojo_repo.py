"""Find, in lean-dojo's cache, the repository that Dojoflow's tracing built, so that
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

from dataclasses import dataclass
from pathlib import Path

from storage.errors import InputError

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
