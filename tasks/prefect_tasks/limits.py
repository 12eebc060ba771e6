"""Taking slots of Prefect's global concurrency limits `gpu`, `lean` and `trace` inside a task
(docs/scaling.md, "Concurrency limits"; how many: tasks/limits.py).

`holding(name, slots)` wraps Prefect's `prefect.concurrency.sync.concurrency`, which in Prefect
3.8.8 (prefect/concurrency/_asyncio.py `aacquire_concurrency_slots_with_lease`) neither creates
a missing limit nor fails on one with `strict=False`: it skips and logs a warning (the server's
`create_if_missing` is deprecated, prefect/server/api/concurrency_limits_v2.py). A request for
more slots than the limit holds is refused by the server with HTTP 422 ("Slots requested is
greater than the limit"), which would fail the task. So `holding` reads the limit first:

- no such limit on this server (a temporary server, or one not started by `dojoflow server
  start`), or an inactive one: nothing is taken, one INFO line says so;
- more slots asked than the limit has: the whole limit is taken (the task then runs alone);
- otherwise `slots` slots, held under a lease Prefect renews while the task runs (a killed
  process's slots come back when the lease runs out, 300 s).

A task waiting for slots stays Running and retries at the server's Retry-After (at most 30 s).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from prefect import get_run_logger
from prefect.client.orchestration import get_client
from prefect.concurrency.sync import concurrency
from prefect.exceptions import MissingContextError, ObjectNotFound


def limit_size(name: str) -> int | None:
    """The size of the active global concurrency limit `name`; None when there is none."""
    with get_client(sync_client=True) as client:
        try:
            limit = client.read_global_concurrency_limit_by_name(name)
        except ObjectNotFound:
            return None
    return limit.limit if limit.active else None


@contextmanager
def holding(name: str, slots: int) -> Iterator[int]:
    """Hold `slots` slots of the limit `name` for the block (none when `slots` is 0); yields the
    number held."""
    if slots <= 0:
        yield 0
        return
    size = limit_size(name)
    try:
        log = get_run_logger()
    except MissingContextError:  # called outside a task run (a task's .fn in a script)
        log = logging.getLogger(__name__)
    if size is None:
        log.info("no active %r concurrency limit on this Prefect server: not taking any (docs/scaling.md)", name)
        yield 0
        return
    occupy = max(1, min(slots, size))  # a limit of 0 (paused) refuses every request: Prefect's error
    with concurrency(name, occupy=occupy, strict=False):
        log.info("holding %d of the %d slots of the %r concurrency limit", occupy, size, name)
        yield occupy
