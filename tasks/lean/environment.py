"""The environment of every Lean process and of every program around it (lake, lean, git,
lean-dojo's worker, comparator), in one place: tracing (tasks/tracing/) and the backends
(tasks/lean/) both start them from `minimal_env()`, and the sandbox launcher
(tasks/lean/sandbox.py) gives a contained process `private_env()` of it and
`toolchain_paths()` read-only.

What passes is what the programs need to run (PATH, HOME, locale, elan's and TLS settings)
and nothing else, so tokens and keys in the caller's environment never reach Lean, lake or git.

This file imports nothing from Dojoflow at its top: the launcher (`python -I sandbox.py`) loads
it by path.

    python -c "from tasks.lean.environment import minimal_env; print(sorted(minimal_env()))"
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping

# Variables a subprocess may inherit: what lake, lean, elan, git and Python need to run.
# Deliberately absent: tokens (GITHUB_ACCESS_TOKEN, HF_TOKEN, cloud keys), proxies (their
# URLs may hold passwords), SSH_AUTH_SOCK. Private repositories: clone them yourself and
# trace the local path.
PASS_THROUGH_ENV = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "TERM",
    "TMPDIR",
    "ELAN_HOME",
    "ELAN_TOOLCHAIN",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "GIT_SSL_CAINFO",
    "SYSTEMROOT",
)


def minimal_env(
    path: str | None = None, extra: Mapping[str, str] | None = None, base: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment for a subprocess: PASS_THROUGH_ENV from `base` (default os.environ),
    PATH replaced by `path` when given, `extra` on top, and git (run by lake or lean-dojo)
    never prompting nor using credential helpers (tasks/git.py)."""
    from tasks.git import NO_PROMPT_ENV  # here, not at the top: the launcher loads this file with no package

    base = os.environ if base is None else base
    env = {k: base[k] for k in PASS_THROUGH_ENV if k in base}
    if path is not None:
        env["PATH"] = path
    env.setdefault("PATH", os.defpath)
    env.update(NO_PROMPT_ENV)  # lake and lean-dojo run git too: no prompt, no credential helper
    env.update(extra or {})
    return env


def elan_home(env: dict[str, str]) -> str | None:
    """Where elan keeps its toolchains ($ELAN_HOME, default ~/.elan), when it exists."""
    home = env.get("ELAN_HOME") or os.path.join(env.get("HOME", "~"), ".elan")
    home = os.path.expanduser(home)
    return home if os.path.isdir(home) else None


def toolchain_paths(lake: str, env: dict[str, str]) -> list[str]:
    """The read-only paths that running `lake` needs: elan's home and lake's own folder
    (both as named and resolved, so a symlink and its target are both visible)."""
    paths = [p for p in (elan_home(env),) if p]
    found = lake if os.sep in lake else shutil.which(lake, path=env.get("PATH"))
    if found:
        paths += [os.path.dirname(os.path.abspath(found)), os.path.dirname(os.path.realpath(found))]
    return paths


def private_env(env: dict[str, str], private: str) -> dict[str, str]:
    """`env` with HOME and TMPDIR in the process's private folder, and ELAN_HOME kept where
    elan's toolchains are (found from the real HOME)."""
    elan = elan_home(env)
    return {**env, "HOME": private, "TMPDIR": private, **({"ELAN_HOME": elan} if elan else {})}
