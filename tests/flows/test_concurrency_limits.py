"""`dojoflow server start` creates the global concurrency limits gpu, lean and trace
(flows/runtime/server.py `ensure_limits`), on a real Prefect server; docs/scaling.md."""

from __future__ import annotations

import asyncio


def _limits() -> dict[str, int]:
    from prefect.client.orchestration import get_client

    async def read():
        async with get_client() as client:
            return {x.name: x.limit for x in await client.read_global_concurrency_limits(limit=100, offset=0)}

    return asyncio.run(read())


def test_missing_limits_are_created_and_existing_ones_kept(prefect):
    from prefect.settings import PREFECT_API_URL

    from flows.runtime.server import ensure_limits

    url = PREFECT_API_URL.value()
    first = ensure_limits(url, {"gpu": 2, "lean": 3, "trace": 1})
    assert first == {"gpu": "created", "lean": "created", "trace": "created"}
    assert ensure_limits(url, {"gpu": 8}) == {"gpu": "kept"}  # a limit resized by hand is not reset
    assert {k: v for k, v in _limits().items() if k in ("gpu", "lean", "trace")} == {"gpu": 2, "lean": 3, "trace": 1}
