"""Is the configured backend usable? Checked before any search, so that a missing package,
`lake` or server is one clear error with the fix, not a failure per theorem."""

from __future__ import annotations

import functools
import importlib.util
import logging
import os
import shutil

from storage.errors import DojoflowError, InputError

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
def _probe(bwrap: str) -> str | None:
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
        why = _probe(sandbox.bwrap_path)
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


def _module_missing(module: str) -> bool:
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


def check_replay(settings: BackendSettings) -> None:
    """Replay answers from the store: nothing to install."""


def check_repl(settings: BackendSettings) -> None:
    sandbox_limits(settings)  # Dojoflow starts its Lean processes: they must be contained
    if _module_missing("lean_interact"):
        raise InputError("backend.kind: repl", "the Python package lean-interact is not installed", LEAN_EXTRA)
    if find_lake(settings.repl.lake_path) is None:
        raise InputError(
            "backend.repl.lake_path",
            f"no `lake` executable at {settings.repl.lake_path!r} (the REPL backend runs Lean through lake)",
            ELAN,
        )
    for repo, folder in settings.repl.projects.items():
        if not os.path.isdir(folder):
            raise InputError(
                f"backend.repl.projects[{repo}]",
                f"{folder} is not a folder",
                "give the local checkout of the traced repository at its traced commit",
            )


def check_kimina(settings: BackendSettings) -> None:
    from .kimina import check_server

    check_server(settings.kimina)


def check_leandojo(settings: BackendSettings) -> None:
    sandbox_limits(settings)  # Dojoflow starts the Dojo's Lean processes: they must be contained
    from tasks.tracing.toolchain import check_lean_dojo

    try:
        check_lean_dojo(settings.leandojo.extra_pythonpath)
    except DojoflowError as e:
        raise InputError("backend.kind: leandojo", str(e), LEAN_EXTRA) from None
    if shutil.which("lake") is None:
        raise InputError("backend.kind: leandojo", "no `lake` on PATH (lean-dojo runs Lean through lake)", ELAN)


def check_checkouts(settings: BackendSettings, theorems) -> None:
    """Every repository of `theorems` has a checkout at its traced commit, for the backends
    that read one (repl; kimina without a configured header)."""
    from .source import check_checkout, project_dir

    if settings.kind == "repl":
        option, projects = "backend.repl.projects", settings.repl.projects
    elif settings.kind == "kimina" and not settings.kimina.header:
        option, projects = "backend.kimina.projects", settings.kimina.projects
    else:
        return
    seen = set()
    for theorem in theorems:
        if theorem.repo_id not in seen:
            seen.add(theorem.repo_id)
            check_checkout(theorem, project_dir(theorem, projects, option), option)


def repository_toolchain(settings: BackendSettings, theorem) -> tuple[str, str] | None:
    """(where it was read, the `lean-toolchain` text) of the theorem's repository as the backend
    will run it: the traced repository in lean-dojo's cache (leandojo; InputError when tracing did
    not leave it there), or the configured checkout (repl, when LeanInteract picks the REPL tag);
    None where the backend fixes no range (kimina) or runs a REPL the user built (repl_path)."""
    if settings.kind == "leandojo":
        from .dojo_repo import find_traced_repo
        from .leandojo import dojo_cache_dir

        found = find_traced_repo(dojo_cache_dir(settings), theorem.url, theorem.commit)
        return str(found.traced_dir), found.lean_toolchain
    if settings.kind == "repl" and settings.repl.repl_path is None:
        from .source import project_dir

        toolchain = project_dir(theorem, settings.repl.projects, "backend.repl.projects") / "lean-toolchain"
        return (str(toolchain.parent), toolchain.read_text()) if toolchain.exists() else None
    return None


def check_versions(settings: BackendSettings, theorems) -> None:
    """Every repository of `theorems` uses a Lean version the backend supports
    (tasks/lean/versions.py); else one InputError naming the repository, its version, the range
    and what to do."""
    from .versions import check_version

    seen = set()
    for theorem in theorems:
        if theorem.repo_id in seen:
            continue
        seen.add(theorem.repo_id)
        found = repository_toolchain(settings, theorem)
        if found is not None and found[1].strip():
            check_version(settings.kind, f"{theorem.url}@{theorem.commit[:12]}", found[1])
