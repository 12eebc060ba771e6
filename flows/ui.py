"""What a run shows in the Prefect UI (artifacts) and records in the catalog's runs table."""

from __future__ import annotations

import json
from datetime import datetime, timezone

from prefect.artifacts import (
    create_markdown_artifact,
    create_progress_artifact,
    create_table_artifact,
    update_progress_artifact,
)

from storage import catalog
from storage.store import Store
from tasks.report import metrics_rows


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in name.lower()).strip("-") or "run"


def error_of(state) -> str:
    try:
        state.result()
    except Exception as e:  # noqa: BLE001
        return f"{type(e).__name__}: {e}"
    return state.message or state.name


def start_progress(name: str, total: int):
    return create_progress_artifact(progress=0.0, description=f"curriculum steps of `{name}` done (of {total})")


def update_progress(artifact_id, done: int, total: int) -> None:
    update_progress_artifact(artifact_id=artifact_id, progress=100.0 * done / max(total, 1))


def publish_metrics_table(home: str, name: str, checkpoint_ids: list[str]) -> None:
    rows = metrics_rows(Store.open(home), checkpoint_ids)
    table = [{k: r[k] for k in ("step", "trainer", "repo", "split", "metric", "value", "count")} for r in rows]
    create_table_artifact(key=f"{_slug(name)}-metrics", table=table or [{"note": "no metrics yet"}],
                          description=f"All metrics of `{name}` so far")


def publish_report(name: str, report: dict) -> None:
    create_markdown_artifact(key=f"{_slug(name)}-report", markdown=report["markdown"],
                             description=f"Run report of `{name}` ({report['path']})")


def record_run_start(home: str, run_id: str, flow: str, config) -> None:
    with catalog.connect(Store.open(home), write=True) as con:
        con.execute("INSERT OR REPLACE INTO runs (run_id, flow, config, status, started_at) VALUES (?, ?, ?, 'running', ?)",
                    [run_id, flow, json.dumps(config.model_dump(mode="json")), datetime.now(timezone.utc)])


def record_run_end(home: str, run_id: str, status: str, report_path: str | None) -> None:
    with catalog.connect(Store.open(home), write=True) as con:
        con.execute("UPDATE runs SET status = ?, finished_at = ?, report_path = ? WHERE run_id = ?",
                    [status, datetime.now(timezone.utc), report_path, run_id])
