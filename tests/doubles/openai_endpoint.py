"""An OpenAI-compatible completions endpoint double on 127.0.0.1 (the wire of vLLM's
`/v1/completions`): `prompt` a list, `n` choices per prompt numbered prompt-major, each
with `text` and `logprobs.token_logprobs`.

Answers come from a table {text found in the prompt: [(completion, [token logprobs])]};
`mode` switches it to answering garbage (`"garbage"`: JSON without choices; `"not-json"`),
or to failing the next `fail_next` requests with HTTP 503. Every request's body and
Authorization header are kept in `requests` for the tests to read.

LoRA adapters as vLLM loads them at run time (vllm/entrypoints/openai/serving_models.py,
`load_lora_adapter` and `_check_load_lora_adapter_request`; the route is registered only with
VLLM_ALLOW_RUNTIME_LORA_UPDATING, else FastAPI answers 404 `{"detail": "Not Found"}`):
`POST /v1/load_lora_adapter {lora_name, lora_path}` answers 200 "Success: LoRA adapter 'NAME' added
successfully.", 400 when a field is missing or the name "has already been loaded"; `lora_updating =
False` makes the route absent. With `base_model` set, a completion naming neither it nor a loaded
adapter answers 404 "The model `X` does not exist." (vLLM's `_check_model`). `adapters` holds
{name: path} of what was loaded.
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
        self.lora_updating = True
        self.adapters: dict[str, str] = {}
        self.base_model: str | None = None
        double = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                double.requests.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
                if self.path == "/v1/load_lora_adapter":
                    return self._load_adapter(body)
                model = body.get("model")
                if double.base_model is not None and model != double.base_model and model not in double.adapters:
                    error = {"object": "error", "message": f"The model `{model}` does not exist.", "code": 404}
                    return self._send(404, json.dumps({**error, "type": "NotFoundError"}).encode())
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

            def _load_adapter(self, body: dict):
                if not double.lora_updating:
                    return self._send(404, b'{"detail":"Not Found"}')
                name, path = body.get("lora_name"), body.get("lora_path")
                if not name or not path:
                    message = "Both 'lora_name' and 'lora_path' must be provided."
                elif name in double.adapters:
                    message = f"The lora adapter '{name}' has already been loaded."
                else:
                    double.adapters[name] = path
                    return self._send(200, f"Success: LoRA adapter '{name}' added successfully.".encode())
                error = {"object": "error", "message": message, "type": "InvalidUserInput", "code": 400}
                return self._send(400, json.dumps(error).encode())

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
