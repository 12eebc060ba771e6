"""A flow run that records itself in the catalog, then blocks inside a task until it is
killed: `python -m tests.flows.stuck_run HOME` (tests/flows/test_crashed_runs.py)."""

import sys
import threading

from prefect import flow, task
from prefect.runtime import flow_run

from storage.store import Store
from tasks.runs import record_run_start


@task(name="block")
def block(home: str) -> None:
    record_run_start(Store.open(home), str(flow_run.id), "stuck", {"name": "stuck"})
    threading.Event().wait()  # until SIGKILL


@flow(name="stuck")
def stuck(home: str) -> None:
    block(home)


if __name__ == "__main__":
    stuck(sys.argv[1])
