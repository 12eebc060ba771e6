"""The `kimina` backend: whole-proof checking against a kimina-lean-server over HTTP.

Wire format (kimina-ast-server 2.1.3; docs/lean-backends.md): `GET /health`;
`POST /api/check` with `{"snippets": [{"id", "code"}], "timeout": int, "debug", "reuse"}`,
answered `{"results": [{"id", "time", "error" | "response"}]}` where `response` is a
Lean REPL command reply. A snippet is the theorem's file header (or the configured
header), the theorem with the proof as its tactic block, the statement check under a fresh
name and `#print axioms` of that name; Lean's answer is split into the answers of these
commands by position (tasks/lean/verdict.py `read_answers`), never by what a message says.

What the server does with a snippet decides its shape (server/split.py, repl.py,
manager.py): the leading `import` lines are the REPL's header, run once per REPL as its
first command (env 0); every later body on that REPL is sent with `env: 0`. So each
snippet starts with its imports (hoisted above comments; `import Init`, which every file
has implicitly, when it has none): env 0 is then the imports alone and no snippet sees
another's declarations. A body-first snippet would make env 0 the first proof's
environment, and later copies of its file redeclare it ("already been declared").
Files that open with `module`/`prelude` cannot be split so; they go with `reuse: false`
(a fresh REPL each).

Snippets go in batches of `batch_size`, `workers` requests at a time. A 429 (no free
REPL), a 502-504 or a dropped connection is retried with exponential backoff; a batch
that still fails (2.0.x answers a whole batch 500 when one snippet kills its REPL) is
checked one snippet at a time, so only the culprit is an error. A snippet the server
answers with an error (timed out, its REPL died) is sent once more, alone (the server
has destroyed that REPL); what still fails is an error, never a rejection. The API key
is read from the environment variable the config names and sent as a Bearer token; it
is never logged or put in a message; preflight checks it on `/api/check`, the route that
demands it (`/health` never does).

Tactic mode does not exist on this server: `start` answers an error saying so.
"""

from __future__ import annotations

import functools
import json
import math
import os
import ssl
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

import httpx

from storage.errors import InputError

from .backend import ProofCheck, ProofState, TacticResult, TheoremSpec
from .config import BackendSettings, KiminaOptions
from .repl_answers import MODULE_REFUSAL
from .source import (
    check_alias,
    file_header,
    project_dir,
    proof_command,
    split_imports,
    statement_check_command,
    without_module_header,
)
from .states import refused_check
from .verdict import Layout, messages_of, read_answers

RETRY_STATUS = {429, 502, 503, 504}  # not 500: a snippet that kills its REPL gives it every time (2.0.x)
IMPLICIT_IMPORT = "import Init"  # what a file without imports imports anyway


class ServerError(Exception):
    """The server could not be reached or kept failing: an infrastructure error."""


@dataclass(frozen=True)
class Snippet:
    """One proof as the server gets it; `outside`: the same without the file's `module` line."""

    id: str
    code: str
    name: str  # the fresh name of the statement check, whose axioms `#print axioms` asks for
    reuse: bool  # False where the header cannot be split off (`module`/`prelude`)
    outside: str | None = None
    tail: str = ""  # the proof, the statement check and `#print axioms`: how `code` and `outside` end

    def wire(self) -> dict:
        return {"id": self.id, "code": self.code}


def _headers(opts: KiminaOptions) -> dict[str, str]:
    key = os.environ.get(opts.api_key_env)
    return {"Authorization": f"Bearer {key}"} if key else {}


@functools.cache
def _tls() -> ssl.SSLContext:
    """httpx's default TLS context (`httpx.create_ssl_context()`: certifi's CA bundle, or
    SSL_CERT_FILE / SSL_CERT_DIR), made once per process: every client otherwise makes its own,
    loading the CA bundle each time (~25 ms of CPU; three per backend opened)."""
    return httpx.create_ssl_context()


def check_server(opts: KiminaOptions, timeout_s: float = 10.0) -> None:
    """Raise InputError unless the server is up (`GET /health`) and takes the API key.

    The key is checked on `/api/check`, the route that demands it (server/auth.py's
    `require_key`; `/health` has no auth). The probe body is empty, so a server that took
    the key answers 422 (no snippets) without starting any Lean, and one that did not, 401."""
    base = opts.url.rstrip("/")
    try:
        with httpx.Client(timeout=timeout_s, verify=_tls()) as client:
            health = client.get(base + "/health")
            probe = client.post(base + "/api/check", json={}, headers=_headers(opts))
    except httpx.HTTPError as e:
        raise InputError(
            "backend.kimina.url",
            f"the kimina-lean-server at {opts.url} is not reachable ({type(e).__name__})",
            "start the server (see docs/lean-backends.md) or fix the URL",
        ) from None
    if probe.status_code in (401, 403):
        state = "no" if not os.environ.get(opts.api_key_env) else "a refused"
        raise InputError(
            "backend.kimina.url",
            f"the server at {opts.url} wants an API key and got {state} key (HTTP {probe.status_code})",
            f"set the environment variable {opts.api_key_env} to the server's LEAN_SERVER_API_KEY",
        )
    if not health.is_success or probe.status_code != 422:
        raise InputError(
            "backend.kimina.url",
            f"{opts.url} answered /health with HTTP {health.status_code} and /api/check with "
            f"HTTP {probe.status_code}, not as a kimina-lean-server does",
            "check that the URL points at a kimina-lean-server",
        )


def server_reason(error: str) -> str:
    """A snippet's `error` from the server, said in Dojoflow's words (server/routers/check.py
    of 2.1.x: a timeout, or a REPL that died under the snippet, which the server destroys)."""
    if "timed out" in error:
        return f"the server's Lean process timed out on it ({error})"
    if error.startswith(("Snippet execution failed", "REPL prep failed")):
        return f"the server's Lean process crashed or was killed on it ({error})"
    return f"the server could not check it ({error})"


class KiminaBackend:
    name = "kimina"

    def __init__(self, settings: BackendSettings):
        self.settings = settings
        self.opts = settings.kimina
        self.client = httpx.Client(
            base_url=self.opts.url.rstrip("/"),
            headers=_headers(self.opts),
            timeout=self.opts.http_timeout_s,
            verify=_tls(),
        )

    def start(self, theorem: TheoremSpec) -> TacticResult:
        return TacticResult(
            "error",
            message="the kimina backend checks whole proofs only: use whole-proof search, "
            "or the repl backend for tactic-by-tactic search",
        )

    def run_tactic(self, theorem: TheoremSpec, state: ProofState, tactic: str) -> TacticResult:
        return self.start(theorem)

    def check_proof(self, theorem: TheoremSpec, proof: str) -> ProofCheck:
        return self.check_proofs([(theorem, proof)])[0]

    def check_proofs(self, items: list[tuple[TheoremSpec, str]]) -> list[ProofCheck]:
        """Check several proofs: batched, `workers` requests at a time; results in input order."""
        results: list[ProofCheck | None] = [None] * len(items)
        pending: dict[bool, list[tuple[int, Snippet]]] = {True: [], False: []}  # by `reuse`
        for i, (theorem, proof) in enumerate(items):
            results[i] = refused_check(self.name, theorem, proof)
            if results[i] is not None:
                continue
            try:
                snippet = self._snippet(theorem, proof, f"{i}-{uuid.uuid4().hex[:8]}")
            except InputError as e:
                results[i] = ProofCheck(False, self.name, error=str(e))
                continue
            pending[snippet.reuse].append((i, snippet))
        size = self.opts.batch_size
        batches = [group[k : k + size] for group in pending.values() for k in range(0, len(group), size)]
        with ThreadPoolExecutor(max_workers=max(1, min(self.settings.workers, len(batches) or 1))) as pool:
            for batch, checks in zip(batches, pool.map(lambda b: self._check_batch([s for _, s in b]), batches)):
                for (i, _), check in zip(batch, checks):
                    results[i] = check
        return results  # type: ignore[return-value]

    def _snippet(self, theorem: TheoremSpec, proof: str, sid: str) -> Snippet:
        """A theorem's snippet, its imports first so the server runs them as the REPL's header
        (module docstring); a `module` file's also without its `module` line, for its axioms."""
        if self.opts.header:
            header = self.opts.header.rstrip() + "\n\n"
        else:
            header = file_header(theorem, project_dir(theorem, self.opts.projects, "backend.kimina.projects"))
        alias = check_alias()
        check = statement_check_command(theorem, alias)
        tail = f"{proof_command(theorem, proof)}{check}\n#print axioms {alias}\n"
        code = self._snippet_text(header, tail)
        if code is not None:
            return Snippet(sid, code, alias, True, tail=tail)
        outside = self._snippet_text(without_module_header(header), tail)
        return Snippet(sid, header + tail, alias, False, outside, tail)

    @staticmethod
    def _snippet_text(header: str, tail: str) -> str | None:
        """Imports first (`import Init` if none), then the rest; None where a `module` or
        `prelude` line must stay first."""
        imports, rest, pinned = split_imports(header)
        return None if pinned else "\n".join(imports or [IMPLICIT_IMPORT]) + "\n\n" + rest + tail

    def _check_batch(self, batch: list[Snippet]) -> list[ProofCheck]:
        """Verdicts for one batch. A request that fails as a whole is split into single
        snippets, so one snippet that kills its REPL takes only its own verdict down."""
        try:
            answers = self._post([s.wire() for s in batch], batch[0].reuse)
        except ServerError as e:
            if len(batch) > 1:
                return [check for snippet in batch for check in self._check_batch([snippet])]
            return [ProofCheck(False, self.name, error=str(e))]
        return [self._answer(snippet, answers.get(snippet.id)) for snippet in batch]

    def _answer(self, snippet: Snippet, answer: dict | None, first_error: str | None = None) -> ProofCheck:
        """One snippet's result. One the server answered with an error (it timed out, or its
        REPL died and was destroyed) is sent once more, alone, on a fresh REPL; then it is an
        error. Where Lean refused `#print axioms` in a `module` (lean4#8174; its message says to
        leave the `module` line out), the proof is read again so, as the repl backend does."""
        if answer is None or answer.get("error") is not None:
            why = "the server's reply has no result for it" if answer is None else server_reason(str(answer["error"]))
            if first_error is not None:
                # the server's own `error` field (its REPL timeout), never the words of a Lean message
                timed_out = answer is not None and "timed out" in str(answer["error"])
                return ProofCheck(False, self.name, error=f"{first_error}; sent again: {why}", timed_out=timed_out)
            try:
                again = self._post([snippet.wire()], snippet.reuse).get(snippet.id)
            except ServerError as e:
                return ProofCheck(False, self.name, error=f"{why}; sent again: {e}")
            return self._answer(snippet, again, why)
        check, refused = self._verdict(answer.get("response") or {}, snippet)
        if refused and snippet.outside is not None:
            moved = Snippet(snippet.id + "-outside", snippet.outside, snippet.name, True, tail=snippet.tail)
            retried = self._check_batch([moved])[0]
            if retried.accepted:
                note = "info: `#print axioms` is refused in a `module`; the axioms were read with the file's `module` line left out"
                return replace(retried, messages=retried.messages + (note,))
        return check

    def _post(self, snippets: list[dict], reuse: bool = True) -> dict[str, dict]:
        # CheckRequest.timeout is an int: a float with a fraction is refused with 422
        timeout = max(1, math.ceil(self.settings.theorem_timeout_s))
        body = {"snippets": snippets, "timeout": timeout, "debug": False, "reuse": reuse}
        wait = self.opts.retry_backoff_s
        last = ""
        per_answer = self.settings.sandbox.max_answer_mb
        cap = None if per_answer is None else int(per_answer * 1024 * 1024) * len(snippets)
        for attempt in range(self.opts.max_retries + 1):
            try:
                res, content = self._request(body, cap)
            except httpx.HTTPError as e:
                last = f"{type(e).__name__} from {self.opts.url}"
            else:
                if res.is_success:
                    try:
                        return {r["id"]: r for r in json.loads(content)["results"]}
                    except (ValueError, KeyError, TypeError) as e:
                        raise ServerError(f"the server answered something that is not a check reply ({e})") from None
                if res.status_code not in RETRY_STATUS:
                    crashed = " (2.0.x: its Lean process crashed or failed)" if res.status_code == 500 else ""
                    text = content[:300].decode("utf-8", "replace")
                    raise ServerError(f"HTTP {res.status_code} from {self.opts.url}/api/check{crashed}: {text}")
                last = f"HTTP {res.status_code} ({content[:100].decode('utf-8', 'replace')})"
            if attempt < self.opts.max_retries:
                time.sleep(wait)
                wait *= 2
        raise ServerError(f"kimina-lean-server failed {self.opts.max_retries + 1} times: {last}")

    def _request(self, body: dict, cap: int | None) -> tuple[httpx.Response, bytes]:
        """POST /api/check, its body read as it streams in, at most `cap` bytes (`max_answer_mb` per
        snippet): Lean's answers are never read whole into memory past the cap (issue 27 §4)."""
        with self.client.stream("POST", "/api/check", json=body) as res:
            chunks, size = [], 0
            for chunk in res.iter_bytes():
                size += len(chunk)
                if cap is not None and size > cap:
                    raise ServerError(
                        f"the server's answer exceeded {cap} bytes ({len(body['snippets'])} snippets); not read"
                    )
                chunks.append(chunk)
            return res, b"".join(chunks)

    def _verdict(self, response: dict, snippet: Snippet) -> tuple[ProofCheck, bool]:
        """(the check, whether Lean refused `#print axioms` in a `module`). The snippet's one
        answer is split into the answers of its commands by position (`verdict.read_answers`:
        the answer about the snippet's fresh name fixes where the server numbers lines from, as
        2.0.x and 2.1.x differ), so a proof that prints a `#print axioms` line fools nothing."""
        messages = messages_of(response.get("messages"))
        refused = any(m.severity == "error" and m.text.startswith(MODULE_REFUSAL) for m in messages)
        header_lines = snippet.code[: len(snippet.code) - len(snippet.tail)].count("\n")
        layout = Layout.of(snippet.code, snippet.name).with_header(header_lines)
        return read_answers(self.name, messages, layout, snippet.name), refused

    def close(self) -> None:
        self.client.close()


def check_kimina(settings: BackendSettings) -> None:
    """The kimina backend's `available` (tasks/lean/registry.py): the server answers."""
    check_server(settings.kimina)


def open_kimina(settings: BackendSettings, store):
    """The kimina backend's `opener` (tasks/lean/registry.py)."""
    return KiminaBackend(settings)
