"""Emitting Dojoflow's events (tasks/events.py builds them) and the task that finds a step's
regressions. `emit` is a plain call, not a task: an event is a side effect of the flow, and
Prefect relates it to the flow run (and the deployment, flow and tags) it is emitted from,
so an automation's notification can link the run (docs/operations.md)."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE
from prefect.events import emit_event

from storage import metrics

from .. import events
from .caching import store_of


def emit(*specs: events.EventSpec) -> int:
    """Emit each event; how many were handed to Prefect's events worker (0 with events off)."""
    return sum(emit_event(**spec.kwargs()) is not None for spec in specs)


@task(name="find-regressions", task_run_name="find-regressions[step {step}]", cache_policy=NO_CACHE)
def find_regressions_task(home: str, run_id: str, step: int, margin: float) -> list[events.Regression]:
    """The run's metrics at `step` on earlier repositories that got worse (tasks/events.py `regressions`)."""
    return events.regressions(metrics.of_run(store_of(home), run_id), step, margin)


def repository_names(home: str) -> dict[str, str]:
    """Repository id -> name, for events that name the repositories a run touched."""
    from storage import catalog

    rows = catalog.query(store_of(home), "SELECT repo_id, name FROM repositories").to_pylist()
    return {r["repo_id"]: r["name"] for r in rows}
