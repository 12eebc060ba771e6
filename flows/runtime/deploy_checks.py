"""Checks `prefect deploy` runs (build steps in prefect.yaml), so a deployment that cannot work
on this machine says so when it is created, not at 2 a.m. on its first night.

The nightly traces every watched repository that moved, and tracing needs Lean's toolchain
(elan, `lean`, `lake`). Deploying from a machine without it is allowed (the worker may be
another machine), but the nightly's schedule is then created paused: it schedules no run
that cannot run here, and one line says so and how to resume it once a worker with Lean
serves the pool. prefect.yaml's schedule reads `active` from this step's output
(`{{ lean-check.schedule_active }}`); `dojoflow doctor` on the worker says what it can run.
"""

from __future__ import annotations

import sys

RESUME = "prefect deployment schedule resume nightly/nightly SCHEDULE_ID"  # ids: `prefect deployment schedule ls nightly/nightly`


def warn_if_no_lean_toolchain(**_) -> dict:
    """Prefect build step: {"lean_toolchain": "found" | "missing", "schedule_active": bool}, and
    one warning line on stderr when missing."""
    from tasks.doctor import check_lean_toolchain

    missing = [c for c in check_lean_toolchain() if not c.ok]
    if missing:
        names = ", ".join(f"{c.name} ({c.found})" for c in missing)
        print(
            f"warning: nightly: no {names} here, and the nightly traces watched repositories: its schedule is "
            f"created paused and schedules no run; on a worker with Lean ({missing[0].fix}; `dojoflow doctor` "
            f"says what it can run), resume it: {RESUME} (ids: prefect deployment schedule ls nightly/nightly)",
            file=sys.stderr,
        )
    return {"lean_toolchain": "missing" if missing else "found", "schedule_active": not missing}
