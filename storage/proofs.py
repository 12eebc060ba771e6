"""The catalog's `proofs` table: every proof a search found, whoever decided it.

One row per (run, checkpoint, theorem, proof): the theorem's identity, the tactics, the
proof as a tactic block, the checker that accepted it (`replay` is never Lean), the axioms
it depends on, how the search went, and why it was searched (`evaluation` or `sorry`).

    dojoflow sql "SELECT full_name, checker, proof FROM proofs ORDER BY found_at DESC"
"""

from __future__ import annotations

import json

from . import catalog
from .ids import stable_hash

COLUMNS = (
    "run_id",
    "checkpoint_id",
    "repo_id",
    "theorem_id",
    "proof_id",
    "file_path",
    "full_name",
    "split",
    "purpose",
    "tactics",
    "proof",
    "checker",
    "axioms",
    "expansions",
    "seconds",
)


def proof_id(theorem_id: str, proof: str, checker: str) -> str:
    return stable_hash([theorem_id, " ".join(proof.split()), checker], 16)


def record_proofs(store, rows: list[dict]) -> int:
    """Write proof rows (dicts with COLUMNS but `proof_id`, `tactics`/`axioms` as lists); one transaction."""
    if not rows:
        return 0
    values = []
    for r in rows:
        pid = proof_id(r["theorem_id"], r["proof"], r["checker"])
        values.append(
            [
                pid if c == "proof_id" else json.dumps(list(r[c])) if c in ("tactics", "axioms") else r.get(c)
                for c in COLUMNS
            ]
        )
    with catalog.connect(store, write=True) as con:
        con.execute(catalog.RECORD_TABLES["proofs"])  # a store created before this table existed gains it here
        con.execute("BEGIN TRANSACTION")
        con.executemany(
            f"INSERT OR REPLACE INTO proofs ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})", values
        )
        con.execute("COMMIT")
    return len(values)


def read_proofs(store, run_id: str | None = None, purpose: str | None = None) -> list[dict]:
    """Proof rows, oldest first, of one run (or all), with the repository's name."""
    with catalog.reading(store):
        if not catalog.has_table(store, "proofs"):
            return []
        rows = catalog.query(
            store,
            """
            SELECT p.*, r.name AS repo FROM proofs p LEFT JOIN repositories r USING (repo_id)
            WHERE ($run IS NULL OR p.run_id = $run) AND ($purpose IS NULL OR p.purpose = $purpose)
            ORDER BY p.found_at, p.repo_id, p.full_name""",
            params={"run": run_id, "purpose": purpose},
        ).to_pylist()
    for r in rows:
        r["tactics"], r["axioms"] = json.loads(r["tactics"]), json.loads(r["axioms"])
    return rows
