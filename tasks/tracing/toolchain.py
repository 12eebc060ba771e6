"""Find the programs tracing needs (`lake`, `lean`, `git`) and lean-dojo, or say how to get them.

`find_toolchain()` returns their paths and versions, read with `--version`, and fails at
once with a message naming what is missing and how to install it; the tracing step calls
it before any clone or build. lean-dojo is looked up without importing it (importing it
resets loguru's handlers and creates its cache folder), so this module never imports it.

Every subprocess of the tracing step gets `tasks.lean.environment.minimal_env()`, the one
environment of every Lean process (tokens and keys never reach lean-dojo, lake or git).

    python -c "from tasks.tracing.toolchain import find_toolchain; print(find_toolchain())"
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from storage.errors import ToolchainMissingError

from ..git import GIT_INSTALL
from ..lean.dojo_repo import ToolchainError, check_lean_dojo
from ..lean.environment import minimal_env

MIN_GIT_VERSION = (2, 25, 0)
"""lean-dojo asserts at import that git is at least this version."""

ELAN_INSTALL = (
    "Install Lean's toolchain manager elan: "
    "`curl https://raw.githubusercontent.com/leanprover/elan/master/elan-init.sh -sSf | sh`, "
    "open a new shell so that ~/.elan/bin is on PATH (elan provides `lake` and `lean`, and fetches "
    "the Lean version each repository's lean-toolchain file names), then "
    "`pip install 'dojoflow[lean]'` for lean-dojo"
)

_VERSION_RE = {
    "lean": re.compile(r"Lean \(version (?P<version>[^\s,)]+)"),
    "lake": re.compile(r"Lake version (?P<version>\S+)"),
    "git": re.compile(r"git version (?P<version>\d+\.\d+(?:\.\d+)?)"),
}


@dataclass(frozen=True)
class Program:
    """One program found on PATH: where it is and the version it reports."""

    name: str
    path: str
    version: str
    version_output: str


@dataclass(frozen=True)
class Toolchain:
    """The programs tracing runs, with versions, as recorded in a trace's provenance."""

    lake: Program
    lean: Program
    git: Program
    lean_dojo_version: str | None
    """Installed lean-dojo version; None when it was not asked for or has no metadata."""

    def as_dict(self) -> dict:
        return asdict(self)


def find_toolchain(
    *,
    path: str | None = None,
    cwd: Path | None = None,
    require_lean_dojo: bool = True,
    pythonpath: Sequence[str | Path] = (),
    timeout_s: float = 120.0,
) -> Toolchain:
    """Locate lake, lean and git on `path` (default: $PATH), read their versions, check lean-dojo.

    `cwd` is where the versions are read: under elan, `lean` and `lake` are the versions a
    lean-toolchain file there names. `pythonpath` lists extra folders where lean-dojo may
    be installed (the tracing subprocess gets them too). Raises ToolchainMissingError (or
    its subclass LeanDojoMissingError) for what is absent, ToolchainError for what is unusable.
    """
    search = os.environ.get("PATH", os.defpath) if path is None else path
    found = {name: shutil.which(name, path=search) for name in ("lake", "lean", "git")}
    missing = [name for name, p in found.items() if p is None]
    if missing:
        lean_missing = [m for m in missing if m != "git"]
        how = []
        if lean_missing:
            how.append(ELAN_INSTALL)
        if "git" in missing:
            how.append(GIT_INSTALL)
        raise ToolchainMissingError(
            ", ".join(missing),
            f"Tracing a Lean repository needs lake, lean and git. {'. '.join(how)}. (Searched PATH={search!r}.)",
        )
    env = minimal_env(path=search)
    programs = {name: _read_version(name, found[name], env, cwd, timeout_s) for name in found}
    git_version = tuple(int(x) for x in programs["git"].version.split("."))
    if git_version < MIN_GIT_VERSION:
        raise ToolchainError(
            "git", f"version {programs['git'].version} is too old (lean-dojo needs 2.25 or newer)", GIT_INSTALL
        )
    lean_dojo_version = check_lean_dojo(pythonpath) if require_lean_dojo else None
    return Toolchain(
        lake=programs["lake"], lean=programs["lean"], git=programs["git"], lean_dojo_version=lean_dojo_version
    )


def _read_version(name: str, exe: str, env: dict, cwd: Path | None, timeout_s: float) -> Program:
    try:
        res = subprocess.run(
            [exe, "--version"],
            check=False,
            capture_output=True,
            text=True,
            env=env,
            cwd=None if cwd is None else str(cwd),
            timeout=timeout_s,
        )
    except subprocess.TimeoutExpired:
        raise ToolchainError(
            name,
            f"`{exe} --version` did not answer within {timeout_s:.0f} s (elan may be downloading a toolchain)",
            "run it once by hand to see what it waits for, then trace again",
        ) from None
    except OSError as e:
        raise ToolchainError(
            name, f"`{exe} --version` could not start ({e})", f"check that {exe} is an executable for this machine"
        ) from None
    output = (res.stdout + res.stderr).strip()
    if res.returncode != 0:
        fix = "run it by hand to see why"
        if "default toolchain" in output:
            fix = (
                "elan has no default toolchain here: run `elan default leanprover/lean4:stable`, "
                "or trace from a folder whose lean-toolchain file names one"
            )
        raise ToolchainError(name, f"`{exe} --version` exited with {res.returncode}: {output[-400:]!r}", fix)
    m = _VERSION_RE[name].search(output)
    if m is None:
        raise ToolchainError(
            name,
            f"cannot read a version in the output of `{exe} --version`: {output[:200]!r}",
            f"check that {exe} is the real {name}",
        )
    return Program(name=name, path=exe, version=m["version"], version_output=output.splitlines()[0])
