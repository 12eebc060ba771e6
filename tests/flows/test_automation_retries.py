"""`dojoflow server setup` against a Prefect server whose SQLite database is busy: Prefect 3.8.8
answers 503 to a request that hit "database is locked" (prefect/server/api/server.py,
`SQLITE_LOCKED_MSG` and the handler that "Send[s] 503 for errors clients can retry on"). A delete
dropped on that answer left a doubled automation behind (CI at 9428aca: 6 automations after the
second setup, not 5). The server here is a plain HTTP server on 127.0.0.1 that answers the
automation routes that way; the real-server path is tests/e2e/test_automations.py."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from flows.runtime import automations


class BusyServer:
    """Answers `busy` 503s to each route before its real answer; records every request."""

    def __init__(self, busy: int, final_status: int = 204):
        self.requests: list[tuple[str, str]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self):
                outer.requests.append((self.command, self.path))
                n = sum(1 for r in outer.requests if r == (self.command, self.path))
                if n <= busy:
                    status, body = 503, {"exception_message": "Service Unavailable"}
                elif self.command == "POST" and self.path.endswith("/filter"):
                    status, body = 200, [{"id": "old-1"}]
                else:
                    status, body = final_status, None
                data = b"" if body is None else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_DELETE = do_POST = _answer  # noqa: N815 (http.server's names)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_port}"

    def close(self):
        self.server.shutdown()


@pytest.fixture(autouse=True)
def _no_backoff(monkeypatch):
    monkeypatch.setattr("time.sleep", lambda s: None)


def test_a_delete_answered_503_is_retried_until_it_is_done():
    server = BusyServer(busy=3)
    try:
        with httpx.Client(base_url=server.url) as http:
            automations._delete(http, "old-1")
        assert server.requests.count(("DELETE", "/automations/old-1")) == 4
    finally:
        server.close()


def test_an_automation_already_gone_is_not_an_error_and_a_lasting_failure_is():
    gone, broken = BusyServer(busy=0, final_status=404), BusyServer(busy=0, final_status=500)
    try:
        with httpx.Client(base_url=gone.url) as http:
            automations._delete(http, "old-1")
        with httpx.Client(base_url=broken.url) as http, pytest.raises(httpx.HTTPStatusError):
            automations._delete(http, "old-1")
    finally:
        gone.close()
        broken.close()


def test_the_lookup_of_older_automations_is_retried_too():
    server = BusyServer(busy=2)
    try:
        with httpx.Client(base_url=server.url) as http:
            assert automations._automation_ids(http, "dojoflow nightly failed") == ["old-1"]
    finally:
        server.close()


def test_a_server_busy_past_every_retry_is_named():
    server = BusyServer(busy=automations.RETRIES)
    try:
        with httpx.Client(base_url=server.url) as http, pytest.raises(httpx.HTTPStatusError) as e:
            automations._delete(http, "old-1")
        assert e.value.response.status_code == 503
    finally:
        server.close()
