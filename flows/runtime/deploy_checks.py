"""Checks `prefect deploy` runs (build steps in prefect.yaml), so a deployment that cannot work
on this machine says so when it is created, not at 2 a.m. on its first night.

The nightly traces every watched repository that moved, and tracing needs Lean's toolchain
(elan, `lean`, `lake`). Deploying from a machine without it is allowed (the worker may be
another machine), so this warns with the fix instead of failing; `dojoflow doctor` on the
worker says the same.
"""

from __future__ import annotations

import sys


def warn_if_no_lean_toolchain(**_) -> dict:
    """Prefect build step: {"lean_toolchain": "found" | "missing"}, and a warning on stderr when missing."""
    from tasks.doctor import check_lean_toolchain

    missing = [c for c in check_lean_toolchain() if not c.ok]
    for c in missing:
        print(
            f"warning: nightly: no {c.name} here ({c.found}); the nightly traces watched repositories "
            f"and needs it on the machine of every worker that runs it. {c.fix}. "
            "`dojoflow doctor` on a worker says what it can run.",
            file=sys.stderr,
        )
    return {"lean_toolchain": "missing" if missing else "found"}
