"""What a run shows in the Prefect UI (artifacts) and records in the catalog's runs table."""

from __future__ import annotations

from prefect.artifacts import (
    create_markdown_artifact,
    create_progress_artifact,
    create_table_artifact,
    update_progress_artifact,
)

from storage.errors import DojoflowError
from storage.store import Store, dojoflow_home
from tasks import runs
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


def publish_metrics_table(home: str, name: str, run_id: str) -> None:
    rows = metrics_rows(Store.open(home), run_id)
    table = [{k: r[k] for k in ("step", "trainer", "repo", "split", "metric", "value", "count")} for r in rows]
    create_table_artifact(key=f"{_slug(name)}-metrics", table=table or [{"note": "no metrics yet"}],
                          description=f"All metrics of `{name}` so far")


def trainer_step_summary(trained, evaluated) -> dict:
    """What the report says of one trainer at one step: its checkpoint, and whether train
    and evaluate ran or were Cached."""
    checkpoint = trained.result().to_dict()
    return {"checkpoint": checkpoint, "seconds": checkpoint["figures"].get("seconds", 0.0),
            "train_state": trained.name, "evaluate_state": evaluated.name, "metrics": len(evaluated.result())}


def publish_report(name: str, report: dict) -> None:
    create_markdown_artifact(key=f"{_slug(name)}-report", markdown=report["markdown"],
                             description=f"Run report of `{name}` ({report['path']})")


def mark_run_failed(flow, flow_run, state) -> None:
    """Flow hook (on_failure, on_crashed): a run that raised is `failed` in `dojoflow runs`,
    not left `running`."""
    config = flow_run.parameters.get("config") or {}
    home = config.get("home") if isinstance(config, dict) else getattr(config, "home", None)
    try:
        store = Store.open(dojoflow_home(home), create=False)
    except DojoflowError:
        return  # failed before the store existed: nothing was recorded
    runs.record_run_end(store, str(flow_run.id), "failed")
