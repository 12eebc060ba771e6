"""The catalog's `whole_proofs` table: whole proofs whole-proof expert iteration kept, several per
statement and toolchain, with where they came from (tasks/expert/whole_proof.py).

A row: the statement (`key`: a repository theorem's id or a statement set's statement id; `kind`
repo | statement; repository or set, name, split, header, statement, informal statement), the
toolchain it was checked under, the proof (the tactic block after `:= by`; `proof_id` hashes it
with whitespace collapsed, so one proof is stored once), its length, the checker, the verdict rule
version and the axioms, and the run, step, round and checkpoint that found it.

Only a verdict of `proved` from a checker that is not the `replay` lower bound, of a train
statement, is stored: a row that says otherwise is a bug upstream and is refused (ValueError).

    dojoflow sql "SELECT key, round, chars, proof FROM whole_proofs ORDER BY key, chars"
"""

from __future__ import annotations

import json

from . import catalog
from .found_proofs import refuse_unverified
from .ids import proof_id

TABLE = "whole_proofs"
COLUMNS = (
    "key",
    "toolchain",
    "proof_id",
    "kind",
    "repo_id",
    "theorem_id",
    "full_name",
    "split",
    "header",
    "statement",
    "informal",
    "proof",
    "chars",
    "checker",
    "rule_version",
    "verdict",
    "axioms",
    "run_id",
    "step",
    "round",
    "checkpoint_id",
)


def record_whole_proofs(store, rows: list[dict]) -> int:
    """Store whole proofs; one already stored for its (key, toolchain) is kept. Returns how many were new."""
    if not rows:
        return 0
    values = []
    for r in rows:
        refuse_unverified(r, f"whole proof of {r.get('full_name')}", "kept")
        r = {**r, "proof_id": proof_id(r["proof"]), "chars": len(r["proof"])}
        values.append([json.dumps(r.get(c) or []) if c == "axioms" else r.get(c) for c in COLUMNS])
    return catalog.insert_new(store, TABLE, COLUMNS, values)


def read_whole_proofs(store, keys: list[str] | None = None) -> list[dict]:
    """Stored whole proofs (of `keys`, or all), by key then length then proof id."""
    rows = catalog.rows_of(store, TABLE, "key", keys, "key, toolchain, chars, proof_id")
    for r in rows:
        r["axioms"] = json.loads(r["axioms"]) if r["axioms"] else []
    return rows
