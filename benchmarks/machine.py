"""Where a benchmark's figures were taken: they mean little without it. Imports nothing
heavy (a benchmark that measures peak memory must not inherit ours)."""

from __future__ import annotations

import os
import platform
import subprocess
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def proc_field(path: str, key: str) -> str | None:
    """The value after the colon on the first line of `path` that starts with `key`
    (Linux /proc files: cpuinfo, meminfo, self/io), or None."""
    try:
        for line in Path(path).read_text().splitlines():
            if line.startswith(key):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def _git(*args: str) -> str | None:
    try:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None


def describe_machine(packages: tuple[str, ...] = ()) -> dict:
    """CPU, cores, memory, load, Python, the named packages' versions and the git commit."""
    versions = {}
    for pkg in ("dojoflow", *packages):
        try:
            versions[pkg] = version(pkg)
        except PackageNotFoundError:
            versions[pkg] = None
    return {
        "platform": platform.platform(),
        "nproc": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "cpu_count": os.cpu_count(),
        "cpu_model": proc_field("/proc/cpuinfo", "model name") or platform.processor() or platform.machine(),
        "memory_total": proc_field("/proc/meminfo", "MemTotal"),
        "loadavg": os.getloadavg() if hasattr(os, "getloadavg") else None,
        "python": platform.python_version(),
        "versions": versions,
        "git_commit": _git("rev-parse", "HEAD"),
        "git_dirty": bool(_git("status", "--porcelain", "--untracked-files=no")),
    }
