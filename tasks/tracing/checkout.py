"""Where a trace starts: the user's input checked and one commit checked out with plain git.

    source = parse_source("https://github.com/yangky11/lean4-example")
    checkout, commit = checkout_commit(source, resolve_remote_head(source), Path("work/checkouts"))

A local path must exist and be the root of a git repository; a url is cloned (the only
network here, with `git ls-remote` when no commit is given); either way the commit must hold
a lakefile and a lean-toolchain. The checkout is what the fetch and build steps
(tasks/tracing/steps.py) work on; the user's own folder is never touched.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from storage import atomic
from storage.errors import InputError

from ..git import (
    GitFailed,
    git_message,
    is_remote,
    normalize_url,
    refuse_credentials,
    remote_ref,
    repo_name,
    run_git,
    run_git_network,
)
from .errors import TracingError

_HEX_RE = re.compile(r"^[0-9a-fA-F]{4,40}$")
GIT_TIMEOUT_S = 3600.0


@dataclass(frozen=True)
class RepoSource:
    """What the user named: a local repository or a remote url."""

    kind: str  # "local" | "remote"
    location: str  # what git clones from: an absolute path or the url as given
    export_url: str  # the url recorded in the export
    name: str


def check_commit_format(commit: str | None) -> str | None:
    """None, or the commit lower-cased if it looks like a (possibly short) hash."""
    if commit is None:
        return None
    c = commit.strip()
    if not _HEX_RE.match(c):
        raise InputError(
            commit,
            "is not a commit hash (expected 4 to 40 hexadecimal characters)",
            "pass a commit hash. For a branch or tag, resolve it first: `git rev-parse NAME` in a "
            "local repository, `git ls-remote URL NAME` for a remote one",
            where="commit",
        )
    return c.lower()


# -- git ------------------------------------------------------------------------------------
def _git(args: list[str], cwd: Path | None = None, timeout: float = 120.0) -> subprocess.CompletedProcess:
    return run_git(args, cwd=cwd, timeout=timeout)


def _git_network(args: list[str], source: RepoSource, commit: str | None, cwd: Path | None = None) -> str:
    """A git command that talks to a remote; failures become TracingError (transient if network)."""
    try:
        return run_git_network(args, cwd=cwd, timeout=GIT_TIMEOUT_S).stdout
    except GitFailed as e:
        raise _tracing_error(e, source, commit) from None


def _tracing_error(e: GitFailed, source: RepoSource, commit: str | None) -> TracingError:
    fix = (
        "the network failed; try again"
        if e.transient
        else "check the url (and that the repository is public: private repositories are traced "
        "from a local clone, since no credentials reach git here; docs/git-and-credentials.md)"
    )
    return TracingError(source.export_url, commit, str(e), fix, transient=e.transient)


def parse_source(url_or_path: str) -> RepoSource:
    """Classify and check the user's input (a url, or a local path that must be a git root)."""
    if not isinstance(url_or_path, str) or not url_or_path.strip():
        raise InputError(repr(url_or_path), "is empty", "pass a git url or the path of a local Lean repository")
    refuse_credentials(url_or_path, "repository url")
    if is_remote(url_or_path):
        url = normalize_url(url_or_path)
        return RepoSource("remote", url_or_path.strip(), url, repo_name(url))
    path = Path(url_or_path).expanduser().resolve()
    if not path.exists():
        raise InputError(
            url_or_path,
            "does not exist",
            "pass the path of a local Lean repository (a git repository with a lakefile) or a git url",
        )
    if not path.is_dir():
        raise InputError(url_or_path, "is not a folder", "pass the root folder of a local Lean repository")
    res = _git(["rev-parse", "--show-toplevel"], cwd=path)
    if res.returncode != 0:
        raise InputError(
            url_or_path,
            f"is not a git repository ({git_message(res.stderr)})",
            "tracing needs a commit: run `git init && git add -A && git commit -m init` there, "
            "or pass the root of the repository",
        )
    top = Path(res.stdout.strip()).resolve()
    if top != path:
        raise InputError(
            url_or_path,
            f"is inside the git repository {top}, not its root",
            f"pass {top} (the folder with the lakefile and lean-toolchain)",
        )
    return RepoSource("local", str(path), str(path), path.name)


def resolve_local_commit(source: RepoSource, commit: str | None) -> str:
    ref = commit or "HEAD"
    res = _git(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], cwd=Path(source.location))
    if res.returncode != 0:
        if commit is None:
            raise InputError(source.location, "has no commits", "commit the repository's files first")
        raise InputError(
            commit,
            f"is not a commit of {source.location} (or is an ambiguous prefix)",
            "pass a commit of that repository (`git log` lists them); a longer prefix if ambiguous",
            where="commit",
        )
    return res.stdout.strip()


def check_lake_project_at(source: RepoSource, repo_dir: Path, commit: str) -> None:
    """The commit must hold a lakefile (lean or toml) and a lean-toolchain at its root."""

    def has(name: str) -> bool:
        return _git(["cat-file", "-e", f"{commit}:{name}"], cwd=repo_dir).returncode == 0

    if not (has("lakefile.lean") or has("lakefile.toml")):
        raise InputError(
            source.export_url,
            f"has no lakefile.lean or lakefile.toml at commit {commit[:12]}",
            "trace a Lake project (Lean 4): its root holds a lakefile and a lean-toolchain file",
        )
    if not has("lean-toolchain"):
        raise InputError(
            source.export_url,
            f"has no lean-toolchain file at commit {commit[:12]}",
            "add one naming the Lean version, e.g. `leanprover/lean4:v4.9.0`, and commit it",
        )


def resolve_remote_head(source: RepoSource) -> str:
    try:
        head = remote_ref(source.location, "HEAD", timeout=GIT_TIMEOUT_S)
    except GitFailed as e:
        raise _tracing_error(e, source, None) from None
    if head is not None:
        return head
    raise TracingError(
        source.export_url, None, "`git ls-remote URL HEAD` returned no HEAD", "pass the commit to trace explicitly"
    )


def _is_clean_checkout(path: Path, commit: str) -> bool:
    if not (path / ".git").exists():
        return False
    head = _git(["rev-parse", "HEAD"], cwd=path)
    status = _git(["status", "--porcelain", "--untracked-files=no"], cwd=path)
    return (
        head.returncode == 0 and head.stdout.strip() == commit and status.returncode == 0 and not status.stdout.strip()
    )


def checkout_commit(source: RepoSource, commit: str, checkouts: Path) -> tuple[Path, str]:
    """A clean checkout of `commit` under `checkouts/<sha12>/<name>`; returns it and the full hash.

    Reused when a previous run left it intact; otherwise cloned into a temporary sibling and
    renamed, so a killed clone is never mistaken for a checkout.
    """
    full = commit if len(commit) == 40 else None
    if full is not None:
        dest = checkouts / full[:12] / source.name
        if _is_clean_checkout(dest, full):
            return dest, full
    checkouts.mkdir(parents=True, exist_ok=True)
    tmp = atomic.temp_sibling(checkouts / f"clone-{commit[:12]}")
    try:
        full = _clone_at(source, commit, tmp)
        dest = checkouts / full[:12] / source.name
        if dest.exists():
            shutil.rmtree(dest)
        dest.parent.mkdir(parents=True, exist_ok=True)
        os.replace(tmp, dest)
        return dest, full
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def _clone_at(source: RepoSource, commit: str, tmp: Path) -> str:
    """Clone `source` into `tmp` and check out `commit` there; its full hash."""
    if source.kind == "remote":
        _git_network(["clone", "--no-checkout", "--quiet", "--", source.location, str(tmp)], source, commit)
    else:
        res = _git(["clone", "--no-checkout", "--quiet", "--", source.location, str(tmp)], timeout=GIT_TIMEOUT_S)
        if res.returncode != 0:
            raise TracingError(
                source.location,
                commit,
                f"`git clone` of the local repository failed: {git_message(res.stderr)}",
                "check that the repository is readable",
            )
    res = _git(["rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}"], cwd=tmp)
    if res.returncode != 0 and source.kind == "remote" and len(commit) == 40:
        # A commit no branch or tag reaches: most hosts (GitHub included) serve it by hash.
        _git_network(["fetch", "--quiet", "origin", commit], source, commit, cwd=tmp)
        res = _git(["rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}"], cwd=tmp)
    if res.returncode != 0:
        raise InputError(
            commit,
            f"is not a commit of {source.export_url}",
            "pass a commit of that repository (a full hash if it is on no branch)",
            where="commit",
        )
    full = res.stdout.strip()
    check_lake_project_at(source, tmp, full)
    co = _git(["checkout", "--quiet", "--detach", full], cwd=tmp, timeout=GIT_TIMEOUT_S)
    if co.returncode != 0:
        raise TracingError(
            source.export_url,
            full,
            f"`git checkout` failed: {co.stderr.strip()[-1000:]}",
            "check the disk space of the work folder",
        )
    return full


def commit_time(repo_dir: Path, commit: str) -> str | None:
    res = _git(["show", "-s", "--format=%cI", commit], cwd=repo_dir)
    if res.returncode != 0:
        return None
    return res.stdout.strip() or None
