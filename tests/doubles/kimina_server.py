"""A kimina-lean-server double on 127.0.0.1: `/health` and `/api/check` as the real
server answers them, with a REPL double behind them (tests/doubles/lean_process/,
its core in-process), so its answers come from the sample's transitions and known proofs.

Modes: `busy_for=N` answers the first N checks with HTTP 429 `No available REPLs`, as
the server does when no REPL is free; a snippet containing `double_hang` gets the
server's timeout error (`Lean REPL command timed out in N seconds`); one containing
`double_crash` makes the whole request fail with HTTP 500. `api_key` makes it require
`Authorization: Bearer <key>`. Every request body is kept in `received`.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from storage.sample import SAMPLE_ROOT
from tests.doubles.lean_process import LeanCore, LeanWorld


class KiminaDouble:
    def __init__(self, *, busy_for: int = 0, api_key: str | None = None):
        self.world = LeanWorld(SAMPLE_ROOT)
        self.busy_for = busy_for
        self.api_key = api_key
        self.received: list[dict] = []
        self.auth_headers: list[str | None] = []
        self.checks = 0
        self._lock = threading.Lock()
        double = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def _send(self, status: int, body: dict) -> None:
                data = json.dumps(body, ensure_ascii=False).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _authorized(self) -> bool:
                auth = self.headers.get("Authorization")
                with double._lock:
                    double.auth_headers.append(auth)
                return double.api_key is None or auth == f"Bearer {double.api_key}"

            def do_GET(self):
                if not self._authorized():
                    return self._send(401, {"detail": "Invalid API key"})
                if self.path == "/health":
                    return self._send(200, {"status": "ok"})
                return self._send(404, {"detail": "Not Found"})

            def do_POST(self):
                if self.path != "/api/check":
                    return self._send(404, {"detail": "Not Found"})
                if not self._authorized():
                    return self._send(401, {"detail": "Invalid API key"})
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with double._lock:
                    double.received.append(body)
                    double.checks += 1
                    busy = double.checks <= double.busy_for
                if busy:
                    return self._send(429, {"detail": "No available REPLs"})
                if any("double_crash" in s["code"] for s in body["snippets"]):
                    return self._send(500, {"detail": "REPL process died"})
                self._send(200, {"results": [double.check(s, body.get("timeout", 60)) for s in body["snippets"]]})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def check(self, snippet: dict, timeout: float) -> dict:
        """One snippet as the server checks it: the server sends the whole code to a REPL as ONE
        command (kimina-lean-server, LEAN.md section 1), so every message is positioned in the
        snippet's own lines. The Lean process double answers a text of several commands as the REPL
        does (tests/doubles/lean_process/core.py)."""
        started = time.perf_counter()
        if "double_hang" in snippet["code"]:
            return {
                "id": snippet["id"],
                "time": float(timeout),
                "error": f"Lean REPL command timed out in {timeout:g} seconds",
            }
        repl = LeanCore(self.world)
        first = repl.answer({"cmd": snippet["code"]})  # the whole snippet, one REPL command
        messages, sorries = list(first.get("messages", [])), first.get("sorries", [])
        response = {"env": 0, **({"messages": messages} if messages else {})}
        if sorries:
            response["sorries"] = sorries
        return {"id": snippet["id"], "time": time.perf_counter() - started, "response": response}

    def snippets(self) -> str:
        return "\n".join(s["code"] for body in self.received for s in body["snippets"])

    def __enter__(self) -> "KiminaDouble":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
