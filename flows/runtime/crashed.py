"""Runs whose process was killed: mark them Crashed in Prefect too, once the catalog
found them (tasks/runs.py `mark_crashed_runs`; docs/runs.md).

Without this a SIGKILLed run stays Running in the Prefect UI forever, with its task
runs, since nothing is left to report its end.
"""

from __future__ import annotations

import uuid
from pathlib import Path

from .environment import prepare_prefect_env

MESSAGE = "the run's process is gone (killed); found by Dojoflow, which marked it crashed"


def _is_flow_run_id(run_id: str) -> bool:
    try:
        uuid.UUID(run_id)
    except ValueError:
        return False  # "local": a run that was not a Prefect flow run
    return True


def mark_crashed_in_prefect(home: Path, run_ids: list[str]) -> str | None:
    """Set Crashed on these flow runs and on their unfinished task runs. Returns why it
    could not (Prefect unreachable), or None: the catalog is already right either way."""
    ids = [r for r in run_ids if _is_flow_run_id(r)]
    if not ids:
        return None
    prepare_prefect_env(Path(home))
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId
    from prefect.exceptions import ObjectNotFound
    from prefect.states import Crashed

    try:
        with get_client(sync_client=True) as client:
            for run_id in ids:
                try:
                    run = client.read_flow_run(run_id)
                except ObjectNotFound:
                    continue  # recorded against another Prefect server
                if run.state is None or not run.state.is_final():
                    client.set_flow_run_state(run_id, Crashed(message=MESSAGE), force=True)
                in_run = FlowRunFilter(id=FlowRunFilterId(any_=[uuid.UUID(run_id)]))
                for task_run in client.read_task_runs(flow_run_filter=in_run):
                    if task_run.state is None or not task_run.state.is_final():
                        client.set_task_run_state(task_run.id, Crashed(message=MESSAGE), force=True)
    except Exception as e:  # noqa: BLE001  (an unreachable server must not break `dojoflow runs`)
        return f"{type(e).__name__}: {e}"
    return None
