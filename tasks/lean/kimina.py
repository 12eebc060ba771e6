"""The `kimina` backend: whole-proof checking against a kimina-lean-server over HTTP.

Wire format (kimina-lean-server; docs/lean-backends.md): `GET /health`;
`POST /api/check` with `{"snippets": [{"id", "code"}], "timeout", "debug", "reuse"}`,
answered `{"results": [{"id", "time", "error" | "response"}]}` where `response` is a
Lean REPL command reply. A snippet is the theorem's file header (or the configured
header), the theorem with the proof as its tactic block, and `#print axioms` of it.
Snippets go in batches of `batch_size`, `workers` requests at a time; a 429 (no free
REPL), a 5xx or a dropped connection is retried with exponential backoff, a snippet
that timed out is sent once more, and what still fails is an error, not a rejection.
The API key is read from the environment variable the config names and sent as a
Bearer token; it is never logged or put in a message.

Tactic mode does not exist on this server: `start` answers an error saying so.
"""

from __future__ import annotations

import os
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import httpx

from storage.errors import InputError
from storage.lean_text import parse_statement

from .backend import ProofCheck, ProofState, TacticResult, TheoremSpec, forbidden_message
from .config import BackendSettings, KiminaOptions
from .guard import forbidden_construct
from .source import file_header, print_axioms_command, project_dir, proof_command, statement_check_command
from .verdict import answer_in, bad_input, messages_of, proof_check

RETRY_STATUS = {429, 500, 502, 503, 504}


@dataclass(frozen=True)
class _Layout:
    """Where the commands of one snippet sit (1-based lines): the header ends at `header_lines`,
    the proof command at `proof_last`, then the statement check and `#print axioms` lines."""

    name: str  # the constant the commands ask about
    header_lines: int
    proof_last: int
    check_line: int
    axioms_line: int


class ServerError(Exception):
    """The server could not be reached or kept failing: an infrastructure error."""


def _headers(opts: KiminaOptions) -> dict[str, str]:
    key = os.environ.get(opts.api_key_env)
    return {"Authorization": f"Bearer {key}"} if key else {}


def check_server(opts: KiminaOptions, timeout_s: float = 10.0) -> None:
    """Raise InputError unless the server answers `GET /health` with 2xx."""
    try:
        res = httpx.get(opts.url.rstrip("/") + "/health", headers=_headers(opts), timeout=timeout_s)
    except httpx.HTTPError as e:
        raise InputError(
            "backend.kimina.url",
            f"the kimina-lean-server at {opts.url} is not reachable ({type(e).__name__})",
            "start the server (see docs/lean-backends.md) or fix the URL",
        ) from None
    if res.status_code in (401, 403):
        raise InputError(
            "backend.kimina.url",
            f"the server at {opts.url} refused the API key (HTTP {res.status_code})",
            f"set the environment variable {opts.api_key_env} to a valid key",
        )
    if not res.is_success:
        raise InputError(
            "backend.kimina.url",
            f"{opts.url}/health answered HTTP {res.status_code}",
            "check that the URL points at a kimina-lean-server",
        )


def declared_name(statement: str) -> str:
    """The name a declaration's text gives (`theorem foo ...` -> `foo`)."""
    return parse_statement(statement).name


class KiminaBackend:
    name = "kimina"

    def __init__(self, settings: BackendSettings):
        self.settings = settings
        self.opts = settings.kimina
        self.client = httpx.Client(
            base_url=self.opts.url.rstrip("/"), headers=_headers(self.opts), timeout=self.opts.http_timeout_s
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
        pending: list[tuple[int, dict, TheoremSpec]] = []
        for i, (theorem, proof) in enumerate(items):
            bad = bad_input(theorem, proof)
            if bad is not None:
                results[i] = ProofCheck(False, self.name, error=bad)
                continue
            why = forbidden_construct(proof)
            if why is not None:
                results[i] = ProofCheck(False, self.name, (forbidden_message(why),))
                continue
            try:
                code, axioms_of = self._snippet(theorem, proof)
            except InputError as e:
                results[i] = ProofCheck(False, self.name, error=str(e))
                continue
            pending.append((i, {"id": f"{i}-{uuid.uuid4().hex[:8]}", "code": code}, axioms_of))
        size = self.opts.batch_size
        batches = [pending[k : k + size] for k in range(0, len(pending), size)]
        with ThreadPoolExecutor(max_workers=max(1, min(self.settings.workers, len(batches) or 1))) as pool:
            for batch, checks in zip(batches, pool.map(self._check_batch, batches)):
                for (i, _, _), check in zip(batch, checks):
                    results[i] = check
        return results  # type: ignore[return-value]

    def _snippet(self, theorem: TheoremSpec, proof: str) -> tuple[str, _Layout]:
        """(Lean code of the snippet, where each command sits in it): the header, the proof
        command, the statement check and `#print axioms`, each command on lines of its own so
        that every message Lean gives is read as the answer of the command it is positioned in."""
        if self.opts.header:
            name = declared_name(theorem.statement)
            header = self.opts.header.rstrip() + "\n\n"
        else:
            header = file_header(theorem, project_dir(theorem, self.opts.projects, "backend.kimina.projects"))
            name = theorem.full_name
        proof_cmd = proof_command(theorem, proof)
        check_cmd = statement_check_command(theorem, name)
        axioms_cmd = print_axioms_command(theorem, name)
        h = header.count("\n")
        p = proof_cmd.count("\n")
        return f"{header}{proof_cmd}{check_cmd}\n{axioms_cmd}\n", _Layout(name, h, h + p, h + p + 1, h + p + 2)

    def _check_batch(self, batch: list[tuple[int, dict, _Layout]]) -> list[ProofCheck]:
        checks: dict[str, ProofCheck] = {}
        todo = list(batch)
        for attempt in range(2):  # a snippet that timed out on the server is sent once more
            try:
                answers = self._post([snippet for _, snippet, _ in todo])
            except ServerError as e:
                for _, snippet, _ in todo:
                    checks[snippet["id"]] = ProofCheck(False, self.name, error=str(e))
                break
            retry = []
            for item in todo:
                _, snippet, layout = item
                answer = answers.get(snippet["id"])
                if answer is None:
                    checks[snippet["id"]] = ProofCheck(
                        False, self.name, error="the server's reply has no result for it"
                    )
                elif answer.get("error") is not None:
                    checks[snippet["id"]] = ProofCheck(False, self.name, error=str(answer["error"]))
                    retry.append(item)
                else:
                    checks[snippet["id"]] = self._verdict(answer.get("response") or {}, layout)
            if not retry or attempt == 1:
                break
            todo = retry
        return [checks[snippet["id"]] for _, snippet, _ in batch]

    def _post(self, snippets: list[dict]) -> dict[str, dict]:
        body = {"snippets": snippets, "timeout": self.settings.theorem_timeout_s, "debug": False, "reuse": True}
        wait = self.opts.retry_backoff_s
        last = ""
        for attempt in range(self.opts.max_retries + 1):
            try:
                res = self.client.post("/api/check", json=body)
            except httpx.HTTPError as e:
                last = f"{type(e).__name__} from {self.opts.url}"
            else:
                if res.is_success:
                    try:
                        return {r["id"]: r for r in res.json()["results"]}
                    except (ValueError, KeyError, TypeError) as e:
                        raise ServerError(f"the server answered something that is not a check reply ({e})") from None
                if res.status_code not in RETRY_STATUS:
                    raise ServerError(f"HTTP {res.status_code} from {self.opts.url}/api/check: {res.text[:300]}")
                last = f"HTTP {res.status_code} ({res.text[:100]})"
            if attempt < self.opts.max_retries:
                time.sleep(wait)
                wait *= 2
        raise ServerError(f"kimina-lean-server failed {self.opts.max_retries + 1} times: {last}")

    def _verdict(self, response: dict, layout: _Layout) -> ProofCheck:
        """Lean's answer to the snippet, split by position into the answer of each command
        (never the first message that looks like `#print axioms`: a proof can print one)."""
        messages = messages_of(response.get("messages"))
        h = layout.header_lines
        proof = answer_in(messages, h + 1, layout.proof_last, h)
        if any(m.severity == "error" for m in proof.messages):
            return proof_check(self.name, layout.name, proof)
        stmt = answer_in(messages, layout.check_line, layout.check_line)
        printed = answer_in(messages, layout.axioms_line, layout.axioms_line)
        return proof_check(self.name, layout.name, proof, stmt, printed)

    def close(self) -> None:
        self.client.close()
