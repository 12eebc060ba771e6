"""What runs recorded in the catalog: the `runs` table, and the metrics of each run.

A run's metrics are every row it recorded, fresh or from a cached evaluation, so a
run can be read whole after later runs (`metrics` is keyed by run, docs/architecture.md).

    dojoflow runs
    dojoflow metrics --run <run id or prefix> --split test
"""

from __future__ import annotations

import json
from datetime import datetime, timezone

from storage import catalog
from storage.errors import InputError


def record_run_start(store, run_id: str, flow: str, config: dict) -> None:
    with catalog.connect(store, write=True) as con:
        con.execute("INSERT OR REPLACE INTO runs (run_id, flow, config, status, started_at) VALUES (?, ?, ?, 'running', ?)",
                    [run_id, flow, json.dumps(config), datetime.now(timezone.utc)])


def record_run_end(store, run_id: str, status: str, report_path: str | None = None) -> None:
    """Close a run's row; a failed run keeps the report path it never wrote as NULL."""
    with catalog.connect(store, write=True) as con:
        con.execute("UPDATE runs SET status = ?, finished_at = ?, report_path = coalesce(?, report_path)"
                    " WHERE run_id = ?", [status, datetime.now(timezone.utc), report_path, run_id])


def runs_table(store):
    return catalog.query(store, """
        SELECT r.run_id, r.flow, r.status, strftime(r.started_at, '%Y-%m-%d %H:%M:%S') AS started,
               strftime(r.finished_at, '%Y-%m-%d %H:%M:%S') AS finished,
               (SELECT count(*) FROM metrics m WHERE m.run_id = r.run_id) AS metrics, r.report_path
        FROM runs r ORDER BY r.started_at DESC""")


def resolve_run(store, run: str | None) -> str | None:
    """A run id or unique prefix -> the run id; None -> the newest run that recorded metrics."""
    if run is None:
        rows = catalog.query(store, """
            SELECT m.run_id FROM metrics m LEFT JOIN runs r USING (run_id)
            GROUP BY m.run_id ORDER BY max(coalesce(r.started_at, m.recorded_at)) DESC LIMIT 1""").to_pylist()
        return rows[0]["run_id"] if rows else None
    rows = catalog.query(store, "SELECT run_id FROM runs WHERE starts_with(run_id, $p)", params={"p": run}).to_pylist()
    if len(rows) != 1:
        what = "matches no run" if not rows else f"matches {len(rows)} runs"
        raise InputError(run, what, "give a run id (or a longer prefix) from `dojoflow runs`", where="--run")
    return rows[0]["run_id"]


def metrics_table(store, run_id: str | None, trainer: str | None = None, split: str | None = None):
    """Metric rows of one run, per step, trainer, repository and split."""
    return catalog.query(store, """
        SELECT m.step, m.trainer, coalesce(r.name, m.repo_id) AS repository, m.split_kind, m.split, m.metric,
               m.value, m.count, left(m.checkpoint_id, 10) AS checkpoint
        FROM metrics m LEFT JOIN repositories r USING (repo_id)
        WHERE m.run_id = $run AND ($trainer IS NULL OR m.trainer = $trainer) AND ($split IS NULL OR m.split = $split)
        ORDER BY m.trainer, m.step, repository, m.split, m.metric""",
        params={"run": run_id, "trainer": trainer, "split": split})
