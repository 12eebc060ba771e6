"""Is the configured backend usable? Checked before any search, so that a missing package,
`lake` or server is one clear error with the fix, not a failure per theorem."""

from __future__ import annotations

import functools
import importlib.util
import logging
import os
import shutil

from storage.errors import InputError

from .config import BackendSettings, SandboxSettings
from .sandbox import Limits, probe

log = logging.getLogger(__name__)

LEAN_EXTRA = "pip install -e '.[lean]' in a Dojoflow checkout, or pip install 'dojoflow[lean]'"
ELAN = (
    "install Lean's toolchain manager elan (`curl https://raw.githubusercontent.com/leanprover/elan/master/"
    "elan-init.sh -sSf | sh`) and open a new shell, or set backend.repl.lake_path to your `lake`"
)


SANDBOX_FIX = (
    "install bubblewrap (`apt-get install bubblewrap`) where unprivileged user namespaces are allowed "
    "(`sysctl kernel.unprivileged_userns_clone=1`; or run as root), or, knowing that model-written proofs then "
    "run as you with your files and network, set backend.sandbox.unsafe_no_sandbox: true"
)


@functools.cache
def bubblewrap_problem(bwrap: str) -> str | None:
    """Why `bwrap` cannot contain a Lean process here, or None when it can (sandbox.probe, asked once
    per process)."""
    return probe(bwrap)


@functools.cache
def _process_cap() -> str:
    """How the launcher caps a sandboxed tree's processes here (tasks/lean/containment.py)."""
    from .containment import Cgroup

    group = Cgroup(64, None)
    try:
        return group.mechanism
    finally:
        group.close()


def sandbox_limits(settings: BackendSettings) -> Limits:
    """How Lean processes of `settings` are contained. Raises InputError where bubblewrap
    cannot run, unless the user opted out with `sandbox.unsafe_no_sandbox` (then warns)."""
    return contain(settings.sandbox, settings.memory_limit_mb, settings.sandbox.cpu_limit_s)


def contain(sandbox: SandboxSettings, memory_limit_mb: int | None, cpu_limit_s: int | None) -> Limits:
    """The Limits of `sandbox` (see sandbox_limits), with these memory and CPU limits."""
    if sandbox.unsafe_no_sandbox:
        log.warning("backend.sandbox.unsafe_no_sandbox: Lean processes run WITHOUT a sandbox, as this user")
        bwrap = None
    else:
        why = bubblewrap_problem(sandbox.bwrap_path)
        if why is not None:
            raise InputError(
                "backend.sandbox", f"Lean runs untrusted proofs only under bubblewrap, and {why}", SANDBOX_FIX
            )
        bwrap = shutil.which(sandbox.bwrap_path)
        if sandbox.max_processes is not None and _process_cap() == "none":
            log.warning(
                "backend.sandbox.max_processes: no pids cgroup can be made here and RLIMIT_NPROC does not hold "
                "for root: a proof's processes are not capped (docs/lean-backends.md, 'Processes, total memory')"
            )
    return Limits(
        bwrap,
        memory_limit_mb,
        cpu_limit_s,
        tuple(sandbox.read_only_paths),
        tuple(sandbox.writable_paths),
        sandbox.max_processes,
        None if sandbox.max_answer_mb is None else int(sandbox.max_answer_mb * 1024 * 1024),
    )


def module_missing(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is None
    except (ImportError, ValueError):
        return True


def find_lake(lake_path: str) -> str | None:
    """The `lake` executable `lake_path` names (a path, or a name on PATH), or None."""
    if os.sep in lake_path:
        return lake_path if os.access(lake_path, os.X_OK) else None
    return shutil.which(lake_path)


def check_available(settings: BackendSettings) -> None:
    """The chosen backend's own check (its `BackendDef.available`)."""
    from .registry import get, gold_checker

    get(settings.kind).check_available(settings)
    if not get(settings.kind).lower_bound:
        gold_checker().check_available(settings)  # `backend.gold.check: on` and comparator cannot run


def check_checkouts(settings: BackendSettings, theorems) -> None:
    """Every repository of `theorems` has a checkout at its traced commit, for a backend that reads
    one (its declaration's `checkouts` option, unless its `header` option is set)."""
    from .registry import of
    from .source import check_checkout, project_dir

    found = of(settings).checkout_option(settings)
    if found is None:
        return
    option, projects = found
    seen = set()
    for theorem in theorems:
        if theorem.repo_id not in seen:
            seen.add(theorem.repo_id)
            check_checkout(theorem, project_dir(theorem, projects, option), option)


def check_versions(settings: BackendSettings, theorems) -> None:
    """Every repository of `theorems` uses a Lean version the backend supports
    (tasks/lean/versions.py); else one InputError naming the repository, its version, the range
    and what to do."""
    from .registry import of
    from .versions import check_version

    backend, seen = of(settings), set()
    for theorem in theorems:
        if theorem.repo_id in seen:
            continue
        seen.add(theorem.repo_id)
        found = backend.repository_toolchain(settings, theorem)
        if found is not None and found[1].strip():
            check_version(settings.kind, f"{theorem.url}@{theorem.commit[:12]}", found[1])
