"""The catalog's `verification_cache` table: Lean's answer to a proof, remembered, so that a
proof is checked once per toolchain whoever asks (search, the proving evaluation, `dojoflow
prove`, GRPO rewards; tasks/lean/verified.py is the one wrapper that reads and writes it).

A row is keyed by everything the answer depends on: the toolchain (the repository's Lean
version), the hash of the header the theorem is elaborated under (its file prefix), the
statement, the normalised proof text, the verifier's rule version (a rule change is a new
key, so old answers are never read again) and the backend that answered (the Dojo cannot
report axioms, so its answer must not stand for the REPL's). It carries what decided it:
the backend, the verdict, Lean's messages, the axioms and the whole answer as JSON.
Writers take the catalog's exclusive lock (storage/catalog.py), so processes and threads
writing the same key serialise and the last identical row wins.

    dojoflow sql "SELECT backend, verdict, statement, proof, axioms FROM verification_cache"
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from . import catalog
from .ids import stable_hash

TABLE = "verification_cache"
COLUMNS = (
    "cache_key",
    "toolchain",
    "header_hash",
    "statement",
    "proof",
    "rule_version",
    "backend",
    "verdict",
    "accepted",
    "messages",
    "axioms",
    "answer",
)


@dataclass(frozen=True)
class CacheKey:
    """What a cached answer depends on (see the module docstring)."""

    toolchain: str  # e.g. "leanprover/lean4:v4.20.0"
    header_hash: str
    statement: str
    proof: str  # normalised (tasks.lean.verified.normalise_proof)
    rule_version: str
    backend: str

    @property
    def digest(self) -> str:
        return stable_hash(
            [self.toolchain, self.header_hash, self.statement, self.proof, self.rule_version, self.backend], 32
        )


@dataclass(frozen=True)
class CachedAnswer:
    """One row: the verdict the rule gave and Lean's answer it was read from."""

    backend: str
    verdict: str  # the rule's status when it was stored: proved | rejected | unverified
    accepted: bool
    messages: tuple[str, ...]
    axioms: tuple[str, ...]
    answer: dict  # the backend's whole ProofCheck as JSON (tasks.lean.verified.check_to_json)


def _ensure_table(con) -> None:
    con.execute(catalog.RECORD_TABLES[TABLE])  # a store created before this table existed gains it here


def _has_table(con) -> bool:
    return con.sql(f"SELECT count(*) FROM duckdb_tables() WHERE table_name = '{TABLE}'").fetchall()[0][0] > 0


def lookup(store, key: CacheKey) -> CachedAnswer | None:
    """The answer stored under `key`, or None."""
    with catalog.connect(store) as con:
        if not _has_table(con):
            return None
        rows = con.sql(
            f"SELECT backend, verdict, accepted, messages, axioms, answer FROM {TABLE} WHERE cache_key = $k",
            params={"k": key.digest},
        ).fetchall()
    if not rows:
        return None
    backend, verdict, accepted, messages, axioms, answer = rows[0]
    return CachedAnswer(
        backend, verdict, bool(accepted), tuple(json.loads(messages)), tuple(json.loads(axioms)), json.loads(answer)
    )


def remember(store, key: CacheKey, answer: CachedAnswer) -> None:
    """Store `answer` under `key` (replacing an identical one a concurrent writer stored)."""
    with catalog.connect(store, write=True) as con:
        _ensure_table(con)
        con.execute(
            f"INSERT OR REPLACE INTO {TABLE} ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})",
            _values(key, answer),
        )


def _values(key: CacheKey, answer: CachedAnswer) -> list:
    return [
        key.digest,
        key.toolchain,
        key.header_hash,
        key.statement,
        key.proof,
        key.rule_version,
        answer.backend,
        answer.verdict,
        answer.accepted,
        json.dumps(list(answer.messages)),
        json.dumps(list(answer.axioms)),
        json.dumps(answer.answer),
    ]


def sync(
    store,
    pending: list[tuple[CacheKey, CachedAnswer]],
    rule_version: str,
    backend: str,
    since=None,
    timeout: float = 120.0,
) -> tuple[dict[str, dict], object]:
    """Store `pending` in one transaction and read back the answers of one rule version and
    backend stored at or after `since` (all when None), over ONE connection (a connection costs
    far more than a row: about 60 ms here, against microseconds): ({digest: answer JSON}, the
    newest `checked_at` read, for the next `since`). Read-only when nothing is pending.
    StoreLockedError after `timeout` s if another process holds the catalog."""
    with catalog.connect(store, write=bool(pending), timeout=timeout) as con:
        if pending:
            _ensure_table(con)
            con.execute("BEGIN TRANSACTION")
            catalog.insert_or_replace(con, TABLE, COLUMNS, [_values(k, a) for k, a in pending], key=(0,))
            con.execute("COMMIT")
        elif not _has_table(con):
            return {}, since
        rows = con.sql(
            f"""SELECT cache_key, answer, checked_at FROM {TABLE}
                WHERE rule_version = $r AND backend = $b AND ($since IS NULL OR checked_at >= $since)""",
            params={"r": rule_version, "b": backend, "since": since},
        ).fetchall()
    newest = max((r[2] for r in rows), default=since)
    return {r[0]: json.loads(r[1]) for r in rows}, newest


def count(store) -> int:
    """How many answers are stored (for reports and tests)."""
    with catalog.connect(store) as con:
        return con.sql(f"SELECT count(*) FROM {TABLE}").fetchall()[0][0] if _has_table(con) else 0
