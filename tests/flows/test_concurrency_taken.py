"""Tasks take slots of Prefect's global concurrency limits (tasks/prefect_tasks/limits.py,
tasks/limits.py; docs/scaling.md "Concurrency limits"), on the real test Prefect server.

That a task is blocked is read from Prefect's own client: each request the server refuses
(HTTP 423) is logged at DEBUG, "Unable to acquire concurrency slot with lease for [names]",
before the retry (prefect/concurrency/services.py, ConcurrencySlotAcquisitionWithLeaseService).
(The server's `denied_slots` column cannot tell: the refusal's update is rolled back with the
423 it raises inside the transaction, prefect/server/api/concurrency_limits_v2.py.) The tests
wait on that and on threading events, never on a clock.
"""

from __future__ import annotations

import contextvars
import logging
import threading
import uuid
from contextlib import contextmanager

import pytest

WAIT_S = 300  # a ceiling for events on a loaded 2-core box, never reached when things work


@contextmanager
def refusals(name: str):
    """An event set when Prefect's client is refused a slot of the limit `name`."""
    refused = threading.Event()

    class Seen(logging.Handler):
        def emit(self, record):
            if record.getMessage().startswith(f"Unable to acquire concurrency slot with lease for [{name!r}]"):
                refused.set()

    # Prefect's internal loggers log DEBUG only under PREFECT_LOGGING_INTERNAL_LEVEL=DEBUG, read per
    # call from the settings of whichever thread logs (prefect/_internal/_logging.py SafeLogger); the
    # acquiring thread is Prefect's own, so this one logger is opened to DEBUG here instead.
    logger = logging.getLogger("prefect._internal.concurrency")
    handler = Seen(logging.DEBUG)
    logger.addHandler(handler)
    logger.isEnabledFor = lambda level: True
    try:
        yield refused
    finally:
        logger.removeHandler(handler)
        del logger.isEnabledFor


@contextmanager
def one_slot_limit(name: str):
    """The limit `name` with 1 slot for the test; whatever was there before is put back."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import GlobalConcurrencyLimitCreate, GlobalConcurrencyLimitUpdate
    from prefect.exceptions import ObjectNotFound

    with get_client(sync_client=True) as client:
        try:
            before = client.read_global_concurrency_limit_by_name(name)
        except ObjectNotFound:
            before = None
        if before is None:
            client.create_global_concurrency_limit(GlobalConcurrencyLimitCreate(name=name, limit=1))
        else:
            client.update_global_concurrency_limit(name, GlobalConcurrencyLimitUpdate(limit=1, active=True))
    try:
        yield
    finally:
        with get_client(sync_client=True) as client:
            if before is None:
                client.delete_global_concurrency_limit_by_name(name)
            else:
                update = GlobalConcurrencyLimitUpdate(limit=before.limit, active=before.active)
                client.update_global_concurrency_limit(name, update)


def _in_thread(fn):
    """Run fn in a thread with this thread's context (the test server's settings); (thread, result box)."""
    ctx = contextvars.copy_context()
    box: dict = {}

    def run():
        try:
            box["value"] = ctx.run(fn)
        except BaseException as e:  # noqa: BLE001 - handed to the test
            box["error"] = e

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, box


def test_two_tasks_under_a_one_slot_limit_do_not_overlap(prefect):
    from prefect import flow, task

    from tasks.prefect_tasks.limits import holding

    name = f"test-limit-{uuid.uuid4().hex[:8]}"
    order: list[str] = []
    entered = {"a": threading.Event(), "b": threading.Event()}
    release = {"a": threading.Event(), "b": threading.Event()}
    someone_in = threading.Event()

    @task
    def hold(me: str) -> int:
        with holding(name, 1) as held:
            order.append(f"in {me}")
            entered[me].set()
            someone_in.set()
            release[me].wait(WAIT_S)
            order.append(f"out {me}")
        return held

    @flow
    def both() -> list[int]:
        futures = [hold.submit("a"), hold.submit("b")]
        return [f.result() for f in futures]

    with one_slot_limit(name), refusals(name) as refused:
        thread, box = _in_thread(both)
        assert refused.wait(WAIT_S), "the second task is never refused"
        assert someone_in.wait(WAIT_S), "no task holds the slot"
        first = "a" if entered["a"].is_set() else "b"
        second = "b" if first == "a" else "a"
        assert entered[first].is_set() and not entered[second].is_set()  # one holds, the other waits outside
        release[first].set()
        assert entered[second].wait(WAIT_S), "the other task never gets the slot once the first lets it go"
        release[second].set()
        thread.join(WAIT_S)
    assert "error" not in box, box.get("error")
    assert box["value"] == [1, 1]
    assert order == [f"in {first}", f"out {first}", f"in {second}", f"out {second}"]


def test_a_missing_limit_is_not_created_and_nothing_is_taken(prefect):
    from prefect import flow, task
    from prefect.client.orchestration import get_client
    from prefect.exceptions import ObjectNotFound

    from tasks.prefect_tasks.limits import holding

    name = f"test-missing-{uuid.uuid4().hex[:8]}"

    @task
    def hold() -> int:
        with holding(name, 2) as held:
            return held

    assert flow(lambda: hold())() == 0
    with get_client(sync_client=True) as client, pytest.raises(ObjectNotFound):
        client.read_global_concurrency_limit_by_name(name)


def test_more_slots_than_the_limit_takes_the_whole_limit(prefect):
    from prefect import flow, task

    from tasks.prefect_tasks.limits import holding

    name = f"test-small-{uuid.uuid4().hex[:8]}"

    @task
    def hold() -> int:
        with holding(name, 4) as held:  # Prefect's server refuses 4 of 1 with HTTP 422
            return held

    with one_slot_limit(name):
        assert flow(lambda: hold())() == 1


def test_the_ingest_task_waits_for_the_trace_slot(prefect, tmp_path):
    """The real ingest task (tracing's task) takes the `trace` limit: while the test holds its only
    slot, the task is refused and does not ingest; released, it runs."""
    from prefect import flow
    from prefect.concurrency.sync import concurrency

    from storage.splits import SplitSettings
    from tasks.config import SourceConfig, TracingConfig
    from tasks.prefect_tasks.curriculum import ingest_task

    home = tmp_path / "home"

    @flow
    def ingest_one():
        return ingest_task(str(home), SourceConfig(sample="NatBasics"), SplitSettings(), TracingConfig(), "NatBasics")

    with one_slot_limit("trace"), refusals("trace") as refused:
        with concurrency("trace", occupy=1, strict=True):
            thread, box = _in_thread(ingest_one)
            while not refused.wait(0.05) and thread.is_alive():  # refused, or (old code) finished
                pass
            assert refused.is_set() and thread.is_alive() and not box  # waiting for the slot, not ingesting
        thread.join(WAIT_S)
    assert "error" not in box, box.get("error")
    assert box["value"].repo_ids
