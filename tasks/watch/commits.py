"""The newest commit of a watched branch, read without cloning any history.

`git ls-remote URL refs/heads/BRANCH` for a remote, `git -C PATH rev-parse` for a local
repository, both through tasks/git.py (no credentials, no prompts, a timeout), so a
nightly job can neither leak secrets nor hang on a password prompt.

    python -c "from tasks.watch import WatchedRepo, latest_commit; \
print(latest_commit(WatchedRepo(url_or_path='https://github.com/yangky11/lean4-example', branch='main')))"
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from storage.errors import InputError, TransientError

from ..git import SHA_RE, GitFailed, git_message, redact_url, remote_ref, run_git
from .config import WatchedRepo

GIT_TIMEOUT_S = 60.0


def latest_commit(repo: WatchedRepo, timeout: float = GIT_TIMEOUT_S) -> str:
    """The full hash of the newest commit of `repo`'s branch, read without cloning.

    Raises TransientError when a retry may help (network, timeout) and InputError when it
    cannot (unknown branch, not a git repository, private or missing remote).
    """
    if repo.is_remote:
        return _remote_commit(repo, timeout)
    return _local_commit(repo, timeout)


def _remote_commit(repo: WatchedRepo, timeout: float) -> str:
    ref = f"refs/heads/{repo.branch}" if repo.branch else "HEAD"
    shown = redact_url(repo.url_or_path)
    try:
        sha = remote_ref(repo.url_or_path, ref, timeout=timeout)
    except GitFailed as e:
        if e.transient:
            raise TransientError(f"{shown}: {e}. The network failed; the next attempt may succeed.") from None
        raise InputError(
            shown,
            str(e),
            "check the URL; a private repository cannot be watched by URL (no credentials reach "
            "git): clone it and watch the local path instead",
        ) from None
    if sha is not None:
        return sha
    what = f"has no branch {repo.branch!r}" if repo.branch else "has no HEAD (an empty repository?)"
    raise InputError(
        shown,
        what,
        f"fix `branch` (`git ls-remote --heads {shown}` lists the branches)",
        where="branch" if repo.branch else None,
    )


def _local_commit(repo: WatchedRepo, timeout: float) -> str:
    path = Path(repo.url_or_path).expanduser()
    if not path.is_dir():
        raise InputError(repo.url_or_path, "is not a folder", "give a git URL or the path of a local git repository")
    rev = f"refs/heads/{repo.branch}^{{commit}}" if repo.branch else "HEAD^{commit}"
    try:
        top = run_git(["-C", str(path), "rev-parse", "--show-toplevel"], timeout=timeout)
        if top.returncode != 0:
            raise InputError(
                repo.url_or_path,
                f"is not a git repository ({git_message(top.stderr)})",
                "give the path of a git repository (one with commits), or its URL",
            )
        if Path(top.stdout.strip()).resolve() != path.resolve():
            # Its commits are those of the enclosing repository, which tracing would refuse.
            raise InputError(
                repo.url_or_path,
                f"is inside the git repository {top.stdout.strip()}, not its root",
                "watch the repository's root folder",
            )
        res = run_git(["-C", str(path), "rev-parse", "--verify", "--quiet", "--end-of-options", rev], timeout=timeout)
    except subprocess.TimeoutExpired:
        raise TransientError(
            f"{repo.url_or_path}: `git rev-parse` did not finish within {timeout:.0f} s "
            "(a slow or busy disk?); the next attempt may succeed."
        ) from None
    if res.returncode == 0 and SHA_RE.match(res.stdout.strip()):
        return res.stdout.strip()
    if repo.branch:
        raise InputError(
            repo.url_or_path,
            f"has no branch {repo.branch!r}",
            f"fix `branch` (`git -C {repo.url_or_path} branch --list` lists the branches)",
            where="branch",
        )
    raise InputError(repo.url_or_path, "has no commit at HEAD", "commit something first (`git commit`)")
