"""An OpenAI-compatible completions endpoint double on 127.0.0.1 (the wire of vLLM's
`/v1/completions`): `prompt` a list, `n` choices per prompt numbered prompt-major, each
with `text` and `logprobs.token_logprobs`.

Answers come from a table {text found in the prompt: [(completion, [token logprobs])]};
`mode` switches it to answering garbage (`"garbage"`: JSON without choices; `"not-json"`),
or to failing the next `fail_next` requests with HTTP 503. Every request's body and
Authorization header are kept in `requests` for the tests to read.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class EndpointDouble:
    def __init__(self, table: dict[str, list[tuple[str, list[float]]]]):
        self.table = table
        self.mode = "ok"
        self.fail_next = 0
        self.requests: list[dict] = []
        double = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                double.requests.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
                if double.fail_next > 0:
                    double.fail_next -= 1
                    return self._send(503, b'{"error": "busy"}')
                if double.mode == "garbage":
                    return self._send(200, json.dumps({"result": "hello"}).encode())
                if double.mode == "not-json":
                    return self._send(200, b"<html>not an API</html>")
                choices = []
                for i, prompt in enumerate(body["prompt"]):
                    answers = next((v for k, v in double.table.items() if k in prompt), [("rfl", [-5.0])])
                    for j in range(body["n"]):
                        text, logprobs = answers[j % len(answers)]
                        choices.append(
                            {
                                "index": i * body["n"] + j,
                                "text": text,
                                "finish_reason": "stop",
                                "logprobs": {"token_logprobs": logprobs, "tokens": []},
                            }
                        )
                self._send(200, json.dumps({"id": "cmpl-1", "object": "text_completion", "choices": choices}).encode())

            def _send(self, code: int, payload: bytes):
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> "EndpointDouble":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
