"""The verifier everything shares: a Lean backend whose whole-proof checks are remembered in
the store's catalog (storage/verification_cache.py), so a proof is checked once per toolchain
whether search, the proving evaluation, `dojoflow prove` or a GRPO reward asks.

    from tasks.lean.verified import open_verifier
    backend = open_verifier(BackendSettings(kind="repl", ...), store)  # a LeanBackend
    backend.check_proof(theorem, "simp")  # Lean once; the same proof again: the catalog

Why each rule (docs/lean-backends.md, "The verification cache"):
- The key is what Lean's answer depends on: the toolchain, the header the theorem is elaborated
  under (hashed), the statement, the proof with only layout Lean ignores taken out, the
  verdict rule's version (it decides which commands are sent and how they are read) and the
  backend (the Dojo cannot report axioms: its answer must not stand for the REPL's).
- Only Lean's answers are stored: an infrastructure error (`ProofCheck.error`: a crash, a hang,
  bad input) is never stored, so the next check asks Lean again; a proof the text guard refuses
  never reaches Lean and is not stored either. Rejections and proofs are.
- `replay` is not wrapped: it answers from the traced data in microseconds (nothing to save),
  and its verdict is not Lean's, so no row of it may sit beside Lean's answers.
- Tactic steps (`start`, `run_tactic`) are passed through: a proof state lives in one process.
Callers apply the verdict rule to the returned check as before; the rule is pure, so a check
read back from the catalog gives the verdict the first check gave.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import threading
import time
import types
import typing
from collections.abc import Callable
from importlib import import_module

from storage.errors import InputError, StoreLockedError
from storage.ids import stable_hash
from storage.verification_cache import CachedAnswer, CacheKey, sync

from .backend import LeanBackend, ProofCheck, TheoremSpec, WrappedBackend
from .config import BackendSettings
from .guard import forbidden_construct, judge

# Cached answers are keyed on the verdict rule's version, the one the ledger records (tasks/ledger.py).
from .verdict import RULE_VERSION

log = logging.getLogger(__name__)

# ProofCheck fields typed loosely (to avoid an import cycle) and the class their JSON decodes to.
_FIELD_CLASSES = {"answers": "tasks.lean.verdict:LeanAnswers", "gold": "tasks.lean.gold:GoldResult"}


def normalise_proof(proof: str) -> str:
    """The proof as Lean is sent it (`source.proof_lines`, without their indentation): its
    canonical text, blank lines around it dropped and lines of spaces emptied. Nothing else is
    folded: re-indenting or joining lines would change a string literal that spans lines, so two
    proofs Lean reads differently could share an answer. LeanTextError for a non-canonical text
    (which `key` never asks for: the guard refuses it)."""
    from .source import proof_lines

    return "\n".join(line[2:] for line in proof_lines(proof))


def header_text(settings: BackendSettings, theorem: TheoremSpec) -> str:
    """What the theorem is elaborated under, as `settings`' backend sends it: its fixed header
    option (kimina's `header`), else the file up to the theorem in the configured checkout; for a
    backend with no checkout option (the Dojo), the traced file at its commit, named."""
    from .registry import of

    backend = of(settings)
    header = backend.fixed_header(settings)
    if header:
        return header
    found = backend.checkout_option(settings)
    if found is None:
        return f"{theorem.url}@{theorem.commit}:{theorem.file_path}:{theorem.start}"
    from .source import file_header, project_dir

    return file_header(theorem, project_dir(theorem, found[1], found[0]))


MAX_STORED_MESSAGE_CHARS = 4000
"""Each message is stored at most this long (its head, then how much was cut): a proof can make
Lean print megabytes (issue 27 §4), and no verdict reads more than a message's head (errors
count by severity; `#print axioms` and the sorry warning are short lines)."""


def capped(check: ProofCheck) -> ProofCheck:
    """`check` with every message (its own and each command's answer's) cut to the stored length."""

    def cut(text: str) -> str:
        if len(text) <= MAX_STORED_MESSAGE_CHARS:
            return text
        return text[:MAX_STORED_MESSAGE_CHARS] + f" … [{len(text) - MAX_STORED_MESSAGE_CHARS} characters cut]"

    answers = check.answers
    if answers is not None:
        from .verdict import Answer

        def cut_answer(a):
            if a is None:
                return None
            messages = tuple(dataclasses.replace(m, text=cut(m.text)) for m in a.messages)
            return Answer(messages, None if a.refused is None else cut(a.refused))

        answers = dataclasses.replace(
            answers,
            proof=cut_answer(answers.proof),
            statement=cut_answer(answers.statement),
            axioms=cut_answer(answers.axioms),
        )
    return dataclasses.replace(check, messages=tuple(cut(m) for m in check.messages), answers=answers)


def _derived_messages(check: ProofCheck) -> tuple[str, ...] | None:
    """The check's messages as `verdict.proof_check` derives them from the proof command's answer."""
    proof = getattr(check.answers, "proof", None)
    if proof is None:
        return None
    return tuple(f"{m.severity}: {m.text}" for m in proof.messages) + ((proof.refused,) if proof.refused else ())


def check_to_json(check: ProofCheck) -> dict:
    """The check as stored: messages capped, and kept once (left out where the answers hold them)."""
    derived = _derived_messages(check) == check.messages
    data = dataclasses.asdict(capped(check))
    if derived:
        del data["messages"]  # rebuilt from the answers by check_from_json
    return data


def check_from_json(data: dict) -> ProofCheck:
    """A ProofCheck from `check_to_json`'s dict (nested dataclasses rebuilt; unknown keys dropped)."""
    hints = typing.get_type_hints(ProofCheck)
    kwargs = {}
    for f in dataclasses.fields(ProofCheck):
        if f.name in data:
            ref = _FIELD_CLASSES.get(f.name)
            kind = _load(ref) if ref and data[f.name] is not None else hints[f.name]
            kwargs[f.name] = _decode(kind, data[f.name])
    check = ProofCheck(**kwargs)
    if "messages" not in data:
        check = dataclasses.replace(check, messages=_derived_messages(check) or ())
    return check


def _load(ref: str):
    module, _, name = ref.partition(":")
    return getattr(import_module(module), name)


def _decode(kind, value):
    """`value` (JSON) as `kind`: dataclasses, tuples and optionals rebuilt, the rest as is."""
    if value is None:
        return None
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin in (typing.Union, types.UnionType):
        return _decode(next(a for a in args if a is not type(None)), value)
    if origin is tuple:
        return tuple(_decode(args[0], v) for v in value)
    if dataclasses.is_dataclass(kind):
        hints = typing.get_type_hints(kind)
        return kind(
            **{f.name: _decode(hints[f.name], value[f.name]) for f in dataclasses.fields(kind) if f.name in value}
        )
    return value


def _status(check: ProofCheck, proof: str) -> str:
    verdict = judge(check, proof)
    return getattr(verdict, "status", None) or ("proved" if verdict.proved else "rejected")


@dataclasses.dataclass
class CacheStats:
    """What the cache did, for benchmarks, logs and tests."""

    hits: int = 0
    misses: int = 0  # checked by the backend, answer stored
    stored: int = 0  # written to the catalog so far
    uncached: int = 0  # passed through and not stored: errors, refused text, no header
    syncs: int = 0  # catalog round trips (each one connection)


class VerifiedBackend(WrappedBackend):
    """`backend` with its whole-proof checks remembered in `store`'s catalog (module docstring).

    A catalog connection costs 60 ms or more here (DuckDB opens the file), thousands of times a
    row, so this process answers from memory: it loads the answers of its rule version and
    backend once, and syncs with the catalog (writes its new answers in one transaction, reads
    those other processes stored since) when `sync_every` answers are pending or `sync_s` seconds
    have passed, and on `close()` (`flush()`). Memory holds every answer of the rule version and
    backend (about 1 KB each).
    A catalog another process keeps locked for `sync_timeout_s` delays the sync, never a check.
    Two processes checking the same new proof within one sync interval both ask Lean; both store it.
    Lookups of other threads wait while a sync runs.
    """

    _OWN = ("backend", "gold")

    def __init__(
        self,
        backend: LeanBackend,
        store,
        header_of: Callable[[TheoremSpec], str],
        rule_version: str = RULE_VERSION,
        sync_every: int = 256,
        sync_s: float = 30.0,
        sync_timeout_s: float = 10.0,
    ):
        self.backend = backend
        self.store = store
        self.header_of = header_of
        self.rule_version = rule_version
        self.sync_every, self.sync_s, self.sync_timeout_s = sync_every, sync_s, sync_timeout_s
        self.stats = CacheStats()
        self._toolchains: dict[str, str] = {}
        self._headers: dict[tuple, str] = {}
        self._known: dict[str, dict] | None = None  # digest -> ProofCheck JSON
        self._pending: list[tuple[CacheKey, CachedAnswer]] = []
        self._watermark = None
        self._synced_at = 0.0
        self._lock = threading.RLock()
        self.gold = None  # tasks.lean.gold_backend.GoldGate: replays accepted proofs (set by use_gold)

    def use_gold(self, gate) -> VerifiedBackend:
        """Pass every answer through the gold gate: accepted proofs replayed by comparator."""
        self.gold = gate
        return self

    @property
    def name(self) -> str:
        """The backend's name, with the verdict level of its proofs where a gold gate decides it."""
        return self.backend.name if self.gold is None else f"{self.backend.name}+{self.gold.level}"

    def close(self) -> None:
        try:
            self.flush()
        finally:
            self.backend.close()

    def flush(self) -> None:
        """Write the pending answers and read what other processes stored (one connection)."""
        with self._lock:
            pending, self._pending = self._pending, []
            try:
                found, self._watermark = sync(
                    self.store, pending, self.rule_version, self.backend.name, self._watermark, self.sync_timeout_s
                )
            except StoreLockedError as e:  # transient: keep the answers for the next sync, never fail a check
                log.warning("verification cache not synced (%s); %d answers kept for the next sync", e, len(pending))
                self._pending = pending + self._pending
                self._known = self._known if self._known is not None else {}
                self._synced_at = time.monotonic()
                return
            self.stats.stored += len(pending)
            self._known = {**(self._known or {}), **found}
            self.stats.syncs += 1
            self._synced_at = time.monotonic()

    def key(self, theorem: TheoremSpec, proof: str) -> CacheKey | None:
        """The cache key of checking `proof` of `theorem`; None when it cannot be cached."""
        if forbidden_construct(proof) is not None:
            return None  # the backend refuses it without Lean
        spot = (theorem.repo_id, theorem.file_path, theorem.start)
        if spot not in self._headers:
            try:
                self._headers[spot] = stable_hash(self.header_of(theorem), 32)
            except InputError:
                return None  # the backend says why itself
        if theorem.repo_id not in self._toolchains:
            try:
                version = self.store.repository(theorem.repo_id).get("lean_version")
            except InputError:
                version = None
            self._toolchains[theorem.repo_id] = version or f"unknown toolchain of {theorem.url}@{theorem.commit}"
        return CacheKey(
            self._toolchains[theorem.repo_id],
            self._headers[spot],
            theorem.statement,
            normalise_proof(proof),
            self.rule_version,
            self.backend.name,
        )

    def check_proof(self, theorem: TheoremSpec, proof: str) -> ProofCheck:
        return self.check_proofs([(theorem, proof)])[0]

    def check_proofs(self, items: list[tuple[TheoremSpec, str]]) -> list[ProofCheck]:
        """Checks in input order: answers already known, the rest from the backend (in its
        batches, where it has them); each new answer Lean gave is stored."""
        from . import check_proofs

        keys = [self.key(theorem, proof) for theorem, proof in items]
        checks = self._remembered(items, keys, lambda todo: check_proofs(self.backend, todo))
        return self._gold(items, checks)

    def _gold(self, items, checks: list[ProofCheck]) -> list[ProofCheck]:
        if self.gold is None:
            return checks
        return [self.gold.attach(theorem, proof, check) for (theorem, proof), check in zip(items, checks)]

    def _check_steps(self, theorem: TheoremSpec, tactics: tuple[str, ...]) -> ProofCheck:
        """The backend's `check_steps` (the Dojo: one tactic per request, as search found them),
        remembered under the steps themselves: the same text split otherwise is another check."""
        text = "\n".join(tactics)
        key = self.key(theorem, text)
        if key is not None:
            key = dataclasses.replace(key, proof="steps: " + json.dumps([t.strip() for t in tactics]))
        run = lambda todo: [self.backend.check_steps(theorem, tuple(tactics))]  # noqa: E731
        return self._gold([(theorem, text)], self._remembered([(theorem, text)], [key], run))[0]

    def _remembered(self, items, keys, run) -> list[ProofCheck]:
        """Known answers from memory; `run(missing items)` for the rest, whose answers are kept."""
        results: list[ProofCheck | None] = [None] * len(items)
        todo = []
        with self._lock:
            if self._known is None:
                self.flush()
            for i, key in enumerate(keys):
                found = self._known.get(key.digest) if key is not None else None
                if found is not None:
                    self.stats.hits += 1
                    results[i] = check_from_json(found)
                else:
                    todo.append(i)
        checks = run([items[i] for i in todo]) if todo else []
        with self._lock:
            for i, check in zip(todo, checks):
                results[i] = check
                key = keys[i]
                if key is None or check.error is not None:
                    self.stats.uncached += 1
                    continue
                self.stats.misses += 1
                data = check_to_json(check)
                verdict = _status(check, items[i][1])
                short = capped(check).messages
                answer = CachedAnswer(check.checker, verdict, check.accepted, short, check.axioms, data)
                self._known[key.digest] = data
                self._pending.append((key, answer))
            if len(self._pending) >= self.sync_every or (
                self._pending and time.monotonic() - self._synced_at >= self.sync_s
            ):
                self.flush()
        return results  # type: ignore[return-value]


def open_verifier(settings: BackendSettings, store) -> LeanBackend:
    """The backend `settings` names (`open_backend`), wrapped in the verification cache unless
    `settings.verification_cache` is off, there is no store, or it is a lower bound (replay)."""
    from . import open_backend
    from .registry import get

    backend = open_backend(settings, store)
    if get(settings.kind).lower_bound:
        return backend  # replay: traced data, no Lean to replay (its verdicts say `replay`)
    if settings.verification_cache and store is not None:
        backend = VerifiedBackend(backend, store, lambda theorem: header_text(settings, theorem))
    from .registry import gold_checker

    # Every proof the fast backend accepts is replayed by the gold checker before it counts
    # (tasks/lean/gold_backend.py); where it cannot run, proofs are named elaborator-checked.
    return gold_checker().open(backend, settings, store)
