"""The one way Dojoflow runs git: no credentials, no prompts, a timeout, clear failures.

Used by the nightly watch (tasks/watch/) and by tracing (tasks/tracing/checkout.py); see
docs/git-and-credentials.md. Every git call here:

- runs with `git_env()`: only what git needs to run and check TLS certificates is
  inherited (no tokens, no proxies, whose URLs may hold passwords, no SSH agent);
- has credential helpers switched off (`-c credential.helper=` and, for git started by
  other programs such as lake, the same setting through GIT_CONFIG_COUNT), so no stored
  credential reaches any host;
- never prompts (GIT_TERMINAL_PROMPT=0, empty askpass, ssh in batch mode) and never reads
  stdin, and stops after a timeout;
- passes URLs after `--`, so a URL cannot be read as an option.

The URL rules (remote or local, the normal form, credentials, redaction) live in
`storage.repo_urls` so the store can use them too; they are re-exported here.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from storage.errors import DojoflowError, InputError, ToolchainMissingError
from storage.repo_urls import (
    is_remote,
    normalize_url,
    redact_url,
    repo_name,
    same_repository,
    url_credentials,
)

__all__ = [
    "GIT_INSTALL",
    "NO_PROMPT_ENV",
    "GitFailed",
    "git_env",
    "git_message",
    "is_remote",
    "looks_transient",
    "normalize_url",
    "redact_url",
    "refuse_credentials",
    "remote_ref",
    "repo_name",
    "run_git",
    "same_repository",
    "url_credentials",
]

GIT_INSTALL = "Install git 2.25 or newer (e.g. `apt-get install git` or `brew install git`)"
GIT_TIMEOUT_S = 120.0
SHA_RE = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")

# What git may inherit: enough to run and to check TLS certificates.
PASS_THROUGH_ENV = (
    "PATH",
    "HOME",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "TMPDIR",
    "SYSTEMROOT",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "GIT_SSL_CAINFO",
)
# Set for git and for every program that may start git (lake clones dependencies): no prompt,
# no credential helper (GIT_CONFIG_COUNT needs git 2.31; older git ignores it, and the `-c`
# of run_git still applies to Dojoflow's own calls).
NO_PROMPT_ENV = {
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_ASKPASS": "",
    "SSH_ASKPASS": "",
    "GCM_INTERACTIVE": "never",
    "GIT_SSH_COMMAND": "ssh -o BatchMode=yes -o ConnectTimeout=30",
    "GIT_CONFIG_COUNT": "1",
    "GIT_CONFIG_KEY_0": "credential.helper",
    "GIT_CONFIG_VALUE_0": "",
}
_TRANSIENT_MARKS = (
    "could not resolve host",
    "temporary failure in name resolution",
    "connection timed out",
    "connection refused",
    "connection reset",
    "failed to connect",
    "early eof",
    "rpc failed",
    "operation timed out",
    "network is unreachable",
    "the remote end hung up unexpectedly",
    "tls connection was non-properly terminated",
    "gnutls_handshake",
    "ssl_connect",
)
_HTTP_5XX_RE = re.compile(r"returned error: 5\d\d")


class GitFailed(DojoflowError):
    """A git command failed. `transient`: a retry may help (network, timeout). The message
    is git's own reason, with any credentials in it redacted."""

    def __init__(self, command: str, reason: str, transient: bool):
        self.command = command
        self.reason = reason
        self.transient = transient
        super().__init__(f"`git {command}` failed: {reason}")


def git_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment git runs in: PASS_THROUGH_ENV from `base` (default os.environ) and NO_PROMPT_ENV."""
    base = os.environ if base is None else base
    env = {k: base[k] for k in PASS_THROUGH_ENV if k in base}
    env.setdefault("PATH", os.defpath)
    env.update(NO_PROMPT_ENV)
    return env


def run_git(
    args: Sequence[str], cwd: str | Path | None = None, timeout: float = GIT_TIMEOUT_S
) -> subprocess.CompletedProcess:
    """Run `git ARGS` in `git_env()` (text output captured, never raising on a non-zero exit).

    Raises ToolchainMissingError when git is absent and subprocess.TimeoutExpired after
    `timeout` seconds.
    """
    cmd = ["git", "-c", "credential.helper=", *args]
    try:
        return subprocess.run(
            cmd,
            cwd=None if cwd is None else str(cwd),
            env=git_env(),
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except FileNotFoundError:
        raise ToolchainMissingError("git", f"{GIT_INSTALL}.") from None


def git_message(stderr: str) -> str:
    """git's own reason, credentials redacted: its first `fatal:`/`error:` line, else its first line."""
    lines = [ln.strip() for ln in stderr.strip().splitlines() if ln.strip()]
    for ln in lines:
        if ln.startswith(("fatal:", "error:")):
            return redact_url(ln)
    return redact_url(lines[0]) if lines else "(no message)"


def looks_transient(text: str) -> bool:
    """Whether git's (or a tool's) output says the network failed, so a retry may help."""
    low = text.lower()
    return any(mark in low for mark in _TRANSIENT_MARKS) or bool(_HTTP_5XX_RE.search(low))


def run_git_network(
    args: Sequence[str], cwd: str | Path | None = None, timeout: float = GIT_TIMEOUT_S
) -> subprocess.CompletedProcess:
    """A git command that talks to a remote: GitFailed (transient or not) unless it succeeds."""
    command = " ".join(a for a in args[:2] if not a.startswith("-"))
    try:
        res = run_git(args, cwd=cwd, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise GitFailed(command, f"no answer within {timeout:.0f} s", transient=True) from None
    if res.returncode != 0:
        raise GitFailed(command, git_message(res.stderr), transient=looks_transient(res.stderr))
    return res


def remote_ref(url: str, ref: str = "HEAD", timeout: float = GIT_TIMEOUT_S) -> str | None:
    """The commit `ref` (`HEAD` or `refs/heads/NAME`) points to on the remote `url`, read
    with `git ls-remote` (no clone); None when the remote has no such ref."""
    res = run_git_network(["ls-remote", "--", url, ref], timeout=timeout)
    for line in res.stdout.splitlines():
        sha, _, name = line.partition("\t")
        if name.strip() == ref and SHA_RE.match(sha.strip()):
            return sha.strip()
    return None


def refuse_credentials(url_or_path: str, field: str) -> str:
    """`url_or_path` unchanged, or an InputError naming `field` when the URL holds credentials
    (shown redacted). Call it wherever a repository URL enters Dojoflow."""
    if url_credentials(url_or_path) is None:
        return url_or_path
    raise InputError(
        redact_url(url_or_path),
        "holds credentials (user info before '@'), which would be written to logs, the catalog and Prefect's database",
        "remove them from the URL. For a private repository, let git keep the secret: clone it "
        "yourself with a credential helper or an SSH key (https://git-scm.com/docs/gitcredentials) "
        "and give the clone's local path",
        where=field,
    )
