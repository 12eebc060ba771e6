"""The catalog's `runs` table: one row per flow run, from start to end.

A run records the process (pid and host) that runs it, so a run whose process was
killed can be told from one still going: `crashed_runs` finds `running` rows whose
process on this host is gone (docs/runs.md). Rows written before pid and host were
recorded have NULL there and are never guessed at.
"""

from __future__ import annotations

import json
import os
import socket
from datetime import UTC, datetime

from . import catalog


def record_start(store, run_id: str, flow: str, config: dict, pid: int | None = None) -> None:
    """A `running` row for `run_id`, owned by process `pid` (default: this one) on this host."""
    with catalog.connect(store, write=True) as con:
        catalog.add_columns(con)  # a catalog from before pid and host were recorded
        con.execute(
            "INSERT OR REPLACE INTO runs (run_id, flow, config, status, started_at, pid, host)"
            " VALUES (?, ?, ?, 'running', ?, ?, ?)",
            [run_id, flow, json.dumps(config), datetime.now(UTC), pid or os.getpid(), socket.gethostname()],
        )


def record_end(
    store, run_id: str, status: str, report_path: str | None = None, finished_at: datetime | None = None
) -> None:
    """Close a run's row (at `finished_at`, default now); a failed run keeps the report path
    it never wrote as NULL."""
    with catalog.connect(store, write=True) as con:
        con.execute(
            "UPDATE runs SET status = ?, finished_at = ?, report_path = coalesce(?, report_path) WHERE run_id = ?",
            [status, finished_at or datetime.now(UTC), report_path, run_id],
        )


def all_runs(store) -> list[dict]:
    """Every run, newest first, with the number of metric rows it recorded."""
    return catalog.query(
        store,
        """
        SELECT r.run_id, r.flow, r.config ->> 'name' AS name, r.status, r.started_at, r.finished_at,
               (SELECT count(*) FROM metrics m WHERE m.run_id = r.run_id) AS metrics, r.report_path
        FROM runs r ORDER BY r.started_at DESC""",
    ).to_pylist()


def resolve(store, prefix: str) -> list[str]:
    """The run ids that start with `prefix`."""
    rows = catalog.query(store, "SELECT run_id FROM runs WHERE starts_with(run_id, $p)", params={"p": prefix})
    return rows.column("run_id").to_pylist()


def process_alive(pid: int, started_by: datetime | None = None) -> bool:
    """Whether process `pid` exists on this machine, is
    not a zombie (killed, not yet reaped) and, given `started_by`, had started by then: a
    pid the system gave to a later process after the run's own died is not the run's."""
    import psutil

    try:
        process = psutil.Process(pid)
        if process.status() == psutil.STATUS_ZOMBIE:
            return False
        return started_by is None or process.create_time() <= started_by.timestamp() + 1.0  # tick rounding
    except psutil.NoSuchProcess:
        return False
    except psutil.Error:
        return True  # exists, owned by someone else


def crashed_runs(store) -> list[str]:
    """Runs still `running` whose process on this host is gone."""
    rows = catalog.query(store, "SELECT * FROM runs WHERE status = 'running'").to_pylist()
    here = socket.gethostname()
    return [
        r["run_id"]
        for r in rows
        if r.get("pid") and r.get("host") == here and not process_alive(int(r["pid"]), r["started_at"])
    ]


def mark_crashed(store, run_ids: list[str]) -> None:
    """Set `crashed` on those of `run_ids` that are still `running` (a run may have ended
    meanwhile). `finished_at` is the run's last sign of life the catalog holds (its start,
    its newest metric or proof), not when the crash was found: a run killed at night and
    found in the morning did not run all night."""
    if not run_ids:
        return
    with catalog.connect(store, write=True) as con:
        con.execute(catalog.RECORD_TABLES["proofs"])  # a catalog from before the proofs table
        con.execute(
            """UPDATE runs SET status = 'crashed', finished_at = greatest(
                   started_at,
                   (SELECT max(m.recorded_at) FROM metrics m WHERE m.run_id = runs.run_id),
                   (SELECT max(p.found_at) FROM proofs p WHERE p.run_id = runs.run_id))
               WHERE status = 'running' AND list_contains(?, run_id)""",
            [run_ids],
        )
