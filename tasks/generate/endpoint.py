"""A tactic generator behind any OpenAI-compatible completions endpoint (vLLM, TGI, hosted).

One POST to `<url>/v1/completions` per batch: every state's prompt in `prompt` (a list),
`n` completions each, `logprobs` on; a tactic's log-probability is the sum of its tokens'
(`choices[i].logprobs.token_logprobs`). Choice `index` i belongs to prompt i // n, as the
OpenAI API and vLLM number them. Timeouts, HTTP 429 and 5xx are retried with exponential
back-off; an answer that is not a completions response is an `EndpointError` naming the
URL, raised by `open` (a probe request) before any search starts. The API key is read from
the environment variable the settings name and only ever sent as a header.

    gen = EndpointGenerator.open(EndpointSettings(url="http://127.0.0.1:8000", model="m"), GeneratorSettings(...))
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

from .base import Candidates, EndpointError, TacticQuery
from .config import EndpointSettings, GeneratorSettings

_FIX_GARBAGE = (
    "point `endpoint.url` at an OpenAI-compatible server (vLLM `vllm serve`, TGI) that answers "
    "/v1/completions with `logprobs`"
)


class _Logprobs(BaseModel):
    token_logprobs: list[float | None]


class _Choice(BaseModel):
    index: int
    text: str
    logprobs: _Logprobs


class _Completions(BaseModel):
    choices: list[_Choice]


def _logprob(choice: _Choice) -> float:
    return float(sum(x for x in choice.logprobs.token_logprobs if x is not None))


@dataclass(frozen=True)
class EndpointGenerator:
    """A client of one endpoint; holds an httpx client, no per-call state."""

    client: Any  # httpx.Client
    endpoint: EndpointSettings
    settings: GeneratorSettings
    seed: list  # one cell: the sampling seed sent with each request (set by `reseed`)
    name: str = "endpoint"
    tokens: list = field(default_factory=lambda: [0])  # one cell: tokens the server generated (tasks/ledger.py)
    served: list = field(
        default_factory=lambda: [None]
    )  # one cell: the loaded adapter's name, asked for instead of `model`
    adapter_status: list = field(default_factory=lambda: [None])  # one cell: what `use_checkpoint` did, in words

    @classmethod
    def open(cls, endpoint: EndpointSettings, settings: GeneratorSettings) -> "EndpointGenerator":
        import httpx

        headers = {}
        if endpoint.api_key_env:
            key = os.environ.get(endpoint.api_key_env)
            if key:
                headers["Authorization"] = f"Bearer {key}"
        client = httpx.Client(base_url=endpoint.url.rstrip("/"), headers=headers, timeout=endpoint.timeout_s)
        gen = cls(client=client, endpoint=endpoint, settings=settings, seed=[None])
        try:
            gen._complete(["⊢ True"], 1, 1, stop=["\n"])  # fails here, before any search, if the answer is unusable
        except BaseException:
            client.close()
            raise
        return gen

    def _post(self, body: dict) -> dict:
        import httpx

        url = f"{self.endpoint.url.rstrip('/')}/v1/completions"
        last = ""
        for attempt in range(self.endpoint.retries + 1):
            if attempt:
                time.sleep(min(0.25 * 2 ** (attempt - 1), 8.0))
            try:
                response = self.client.post("/v1/completions", json=body)
            except httpx.TimeoutException:
                last = f"no answer within {self.endpoint.timeout_s} s"
                continue
            except httpx.TransportError as e:
                last = f"unreachable ({type(e).__name__})"
                continue
            if response.status_code == 429 or response.status_code >= 500:
                last = f"HTTP {response.status_code}"
                continue
            if response.status_code != 200:
                raise EndpointError(
                    url,
                    f"answered HTTP {response.status_code}: {response.text[:200]!r}",
                    "check `endpoint.model` and the server's logs",
                )
            try:
                return response.json()
            except ValueError:
                raise EndpointError(
                    url, f"answered something that is not JSON: {response.text[:120]!r}", _FIX_GARBAGE
                ) from None
        raise EndpointError(
            url,
            f"failed after {self.endpoint.retries + 1} tries (last: {last})",
            "check that the server is up and not overloaded, or raise `endpoint.timeout_s` / `endpoint.retries`",
            transient=True,
        )

    def use_checkpoint(self, checkpoint) -> str:
        """Serve `checkpoint` (a folder) from now on, when it is a LoRA adapter the server can load:
        vLLM's `POST /v1/load_lora_adapter {lora_name, lora_path}` (vllm/entrypoints/openai/
        serving_models.py `load_lora_adapter`; the route exists only with VLLM_ALLOW_RUNTIME_LORA_UPDATING,
        else HTTP 404; a name loaded already answers 400 "has already been loaded", which is this
        adapter: its name is its checkpoint folder's). Returns, in words, which model answers."""
        from pathlib import Path

        from tasks.models.loading import is_adapter_dir

        path = Path(checkpoint).expanduser().resolve()
        base = f"the server's own model {self.endpoint.model!r}"
        if not self.endpoint.load_adapters:
            status = f"not loading {path.name} (endpoint.load_adapters is off): {base} answers"
        elif not is_adapter_dir(path):
            status = f"cannot load {path.name}: it is a full model, not a LoRA adapter (restart the server with it); {base} answers"
        else:
            status = self._load_adapter(f"dojoflow-{path.name}", path, base)
        self.adapter_status[0] = status
        return status

    def _load_adapter(self, name: str, path, base: str) -> str:
        import httpx

        url = f"{self.endpoint.url.rstrip('/')}/v1/load_lora_adapter"
        try:
            response = self.client.post("/v1/load_lora_adapter", json={"lora_name": name, "lora_path": str(path)})
        except httpx.HTTPError as e:
            return f"cannot load adapter {name}: {url} failed ({type(e).__name__}); {base} answers"
        text = response.text[:200]
        if response.status_code == 200 or (response.status_code == 400 and "already been loaded" in text):
            self.served[0] = name
            return f"adapter {name} loaded into {self.endpoint.url} and asked for by name"
        if response.status_code == 404 and "lora" not in text.lower():
            why = "the server has no adapter loading (start vLLM with --enable-lora and VLLM_ALLOW_RUNTIME_LORA_UPDATING=True)"
        else:
            why = f"the server answered HTTP {response.status_code}: {text!r}"
        return f"cannot load adapter {name}: {why}; {base} answers"

    def _complete(self, prompts: list[str], n: int, max_tokens: int, stop: list[str] | None) -> list[Candidates]:
        body = {
            "model": self.served[0] or self.endpoint.model,
            "prompt": prompts,
            "n": n,
            "max_tokens": max_tokens,
            "temperature": self.settings.temperature,
            "logprobs": 1,
        }
        if stop:
            body["stop"] = stop
        if self.seed[0] is not None:
            body["seed"] = self.seed[0]
        url = f"{self.endpoint.url.rstrip('/')}/v1/completions"
        try:
            parsed = _Completions.model_validate(self._post(body))
        except ValidationError as e:
            first = e.errors()[0]
            where = ".".join(str(x) for x in first["loc"])
            raise EndpointError(
                url,
                f"answered something that is not an OpenAI completions response with logprobs "
                f"(`{where}`: {first['msg']})",
                _FIX_GARBAGE,
            ) from None
        out: list[dict[str, tuple[str, float]]] = [{} for _ in prompts]
        self.tokens[0] += sum(len(c.logprobs.token_logprobs) for c in parsed.choices)  # one logprob per token
        for choice in parsed.choices:
            slot = choice.index // n
            if not 0 <= slot < len(prompts):
                raise EndpointError(
                    url, f"answered choice index {choice.index} for {len(prompts)} prompts × n={n}", _FIX_GARBAGE
                )
            text = choice.text.strip() if stop is None else choice.text.strip().split("\n")[0].strip()
            if text:
                key = " ".join(text.split())
                lp = _logprob(choice)
                if key not in out[slot] or lp > out[slot][key][1]:
                    out[slot][key] = (text, lp)
        return [sorted(d.values(), key=lambda t: -t[1]) for d in out]

    def generate(self, queries: Sequence[TacticQuery], k: int) -> list[Candidates]:
        if not queries:
            return []
        prompts = [self.endpoint.prompt_template.format(goals=q.goals) for q in queries]
        return self._complete(prompts, k, self.settings.max_new_tokens, stop=["\n"])

    def generate_proofs(self, queries: Sequence[TacticQuery], n: int) -> list[Candidates]:
        if not queries:
            return []
        prompts = [
            self.endpoint.proof_prompt_template.format(
                goals=q.goals, statement=getattr(q.theorem, "statement", "") or ""
            )
            for q in queries
        ]
        return self._complete(prompts, n, self.settings.max_proof_tokens, stop=None)

    def reseed(self, seed: int) -> None:
        self.seed[0] = seed

    def close(self) -> None:
        self.client.close()
