"""The catalog's `found_proofs` table: proofs expert iteration found that the verifier accepted,
stored once per (theorem, toolchain), with where they came from. Later rounds train on them.

A row: the theorem (id, repository, url, file, name, split, a hash of its statement), the
toolchain it was checked under, the run, curriculum step, round and checkpoint that found it,
the checker (backend) and verdict rule version that accepted it, the tactics, the proof, for
step-wise search the steps with the states Lean reported (`[{state_before, tactic,
state_after}]`), the axioms, the expansions it took, and `carried_from` (the theorem id of an
earlier commit whose proof was checked again here) for a proof carried to a new commit.

Only a verdict of `proved` from a checker that is not the `replay` lower bound is stored: a
row that says otherwise is a bug upstream and is refused (ValueError).

    dojoflow sql "SELECT round, full_name, checker, proof FROM found_proofs ORDER BY found_at"
"""

from __future__ import annotations

import json

from . import catalog

TABLE = "found_proofs"
JSON_COLUMNS = ("tactics", "steps", "axioms")
COLUMNS = (
    "theorem_id",
    "toolchain",
    "repo_id",
    "url",
    "file_path",
    "full_name",
    "split",
    "statement_hash",
    "run_id",
    "step",
    "round",
    "checkpoint_id",
    "checker",
    "rule_version",
    "verdict",
    "tactics",
    "proof",
    "steps",
    "axioms",
    "expansions",
    "carried_from",
)
NOT_A_VERIFIER = frozenset({"replay"})  # answers from traced data: a lower bound, never Lean's verdict


def refuse_unverified(row: dict, what: str, kept: str, train_only: bool = True) -> None:
    """ValueError unless `row` (a `what`, e.g. "found proof of NAME") has verdict `proved` from a
    checker that is a verifier and (`train_only`) is of a train statement: a row that says
    otherwise is a bug upstream. `kept`: how the message says such rows are kept."""
    if row.get("verdict") != "proved" or not row.get("checker") or row.get("checker") in NOT_A_VERIFIER:
        raise ValueError(
            f"{what} has verdict {row.get('verdict')!r} from checker "
            f"{row.get('checker')!r}: only proofs a verifier called proved may be {kept}"
        )
    if train_only and row.get("split") != "train":
        raise ValueError(f"{what} is of split {row.get('split')!r}: only train")


def record_found(store, rows: list[dict]) -> int:
    """Store found proofs; a (theorem, toolchain) that has one keeps it. Returns how many were new."""
    if not rows:
        return 0
    for r in rows:
        refuse_unverified(r, f"found proof of {r.get('full_name')}", "stored as found")
    values = [[json.dumps(r.get(c)) if c in JSON_COLUMNS else r.get(c) for c in COLUMNS] for r in rows]
    return catalog.insert_new(store, TABLE, COLUMNS, values)


def read_found(store, repo_ids: list[str] | None = None) -> list[dict]:
    """Found proofs (of `repo_ids`, or all), oldest first, JSON columns decoded."""
    rows = catalog.rows_of(store, TABLE, "repo_id", repo_ids, "found_at, repo_id, full_name")
    for r in rows:
        for c in JSON_COLUMNS:
            r[c] = json.loads(r[c]) if r[c] is not None else None
    return rows


def carried_candidates(store, url: str, full_names: list[str]) -> dict[tuple[str, str, str], dict]:
    """{(full_name, statement_hash, toolchain): a found proof} of `url`'s theorems at any commit:
    what a new commit may carry over, once the verifier accepts it there again."""
    if not catalog.has_table(store, TABLE) or not full_names:
        return {}
    rows = catalog.query(
        store,
        f"""SELECT * FROM {TABLE} WHERE url = $url AND list_contains($names, full_name)
            ORDER BY found_at""",
        params={"url": url, "names": list(full_names)},
    ).to_pylist()
    out = {}
    for r in rows:
        for c in JSON_COLUMNS:
            r[c] = json.loads(r[c]) if r[c] is not None else None
        out.setdefault((r["full_name"], r["statement_hash"], r["toolchain"]), r)
    return out
