"""Reading statement sets for training and evaluation, and the proofs a verdict accepted.

The read API (what whole-proof SFT and expert iteration use):

    statements(store, sets=None, split=None) -> [row]
        row: set, statement_id, fingerprint, name, split, header, statement (ends in `:=`),
             informal, claimed_proof, lean_version, mathlib_version, benchmark, publish_proofs
    training_statements(store, sets=None) -> [row]
        the train rows, once per statement_id, without any benchmark statement (a set marked
        `benchmark: true`, a `benchmarks:` file stored in the store; exact fingerprint or n-gram
        near-copy, storage/contamination.py) and without any statement another set holds in val/test
    verified_proofs(store, sets=None, split="train") -> [row]
        row: statement_id, set, name, split, header, statement, proof (the text after `:=`),
             toolchain, checker, verdict_level, origin, model, checkpoint_id, run_id, round
        only proofs a verdict accepted (never a claimed one), of statements training may use
        when split == "train"
    record_verified_proofs(store, rows) -> int      (new rows; verdict `proved`, checker not `replay`)
    claimed_proofs(store, sets=None) -> [row]       (statements whose set ships a proof, not yet verified)
    check_toolchain(store, set_name, lean_version)  (InputError: the set was written for another Lean)
    lean_code(header, statement, proof) -> str      (the text Lean checks)
"""

from __future__ import annotations

import json

from .. import catalog
from ..contamination import ContaminationSettings, contaminated
from ..errors import InputError
from ..found_proofs import refuse_unverified
from ..ids import proof_id
from .identity import same_lean
from .sets import list_sets, read_statements, set_meta

TABLE = "statement_proofs"
COLUMNS = (
    "statement_id",
    "toolchain",
    "proof_id",
    "set_name",
    "name",
    "proof",
    "checker",
    "verdict",
    "verdict_level",
    "rule_version",
    "origin",
    "model",
    "checkpoint_id",
    "run_id",
    "round",
)
VERDICT_LEVELS = ("kernel-replayed", "elaborator-checked")


def lean_code(header: str, statement: str, proof: str) -> str:
    """The file Lean checks: the header, the statement (ending in `:=`) and the proof after it."""
    head = header if not header or header.endswith("\n") else header + "\n"
    return f"{head}{statement} {proof.strip()}\n"


def statements(store, sets: list[str] | None = None, split: str | None = None) -> list[dict]:
    """Rows of `sets` (all when None), optionally of one split, with their set's settings."""
    metas = {m["name"]: m for m in list_sets(store)}
    table = read_statements(store, sets)
    out = []
    for r in table.to_pylist():
        if split is not None and r["split"] != split:
            continue
        m = metas[r["set_name"]]
        r["set"] = r.pop("set_name")
        r["benchmark"] = bool(m.get("benchmark"))
        r["publish_proofs"] = m.get("publish_proofs", True) is not False
        out.append(r)
    return out


def _benchmark_theorems(store) -> list[dict]:
    """Every benchmark statement the store knows: sets marked benchmark, and `benchmarks:` files."""
    found = []
    for m in list_sets(store):
        if m.get("benchmark"):
            rows = read_statements(store, [m["name"]], columns=["name", "statement"]).to_pylist()
            found.append({"name": m["name"], "theorems": rows})
    bench_dir = store.root / "benchmarks"
    if bench_dir.is_dir():
        for path in sorted(bench_dir.glob("*.json")):
            data = json.loads(path.read_text())
            found.append({"name": data["name"], "theorems": data["theorems"]})
    return found


def training_statements(store, sets: list[str] | None = None, settings: ContaminationSettings | None = None):
    """The statements training may use (see the module's docstring), once each, first set first."""
    rows = [r for r in statements(store) if sets is None or r["set"] in sets]
    held_out = {r["statement_id"] for r in rows if r["split"] != "train" or r["benchmark"]}
    if sets is not None:
        held_out |= {r["statement_id"] for r in statements(store) if r["split"] != "train" or r["benchmark"]}
    pool, seen = [], set()
    for r in rows:
        if r["split"] == "train" and r["statement_id"] not in held_out and r["statement_id"] not in seen:
            seen.add(r["statement_id"])
            pool.append(r)
    benchmarks = _benchmark_theorems(store)
    if not benchmarks or not pool:
        return pool
    probe = [
        {"repo_id": r["set"], "theorem_id": r["statement_id"], "full_name": r["name"], "statement": r["statement"]}
        for r in pool
    ]
    dropped = {d["theorem_id"] for d in contaminated(probe, benchmarks, settings or ContaminationSettings())}
    return [r for r in pool if r["statement_id"] not in dropped]


def check_toolchain(store, set_name: str, lean_version: str | None) -> None:
    """InputError (one line) when `set_name` was written for another Lean than `lean_version`."""
    meta = set_meta(store, set_name)
    if not same_lean(meta.get("lean_version"), lean_version):
        raise InputError(
            f"statement set {set_name}",
            f"was written for Lean {meta['lean_version']}, the backend checks with Lean {lean_version}",
            "check it with a backend at the set's version (or import the set again with the --lean-version it "
            "was written for)",
        )


def record_verified_proofs(store, rows: list[dict]) -> int:
    """Store verified proofs (COLUMNS but proof_id; verdict_level defaults to elaborator-checked);
    a (statement, toolchain, proof) stored already is kept. Returns how many were new."""
    if not rows:
        return 0
    values = []
    for r in rows:
        refuse_unverified(r, f"proof of {r.get('name') or r.get('statement_id')}", "stored as verified", False)
        r = {"verdict_level": "elaborator-checked", **r, "proof_id": proof_id(r["proof"])}
        values.append([r.get(c) for c in COLUMNS])
    new = catalog.insert_new(store, TABLE, COLUMNS, values)
    if new:
        catalog.refresh_views(store)  # `statements.verified_proof` reads the table once it exists
    return new


def _proof_rows(store) -> list[dict]:
    if not catalog.has_table(store, TABLE):
        return []
    return catalog.query(store, f"SELECT * FROM {TABLE} ORDER BY found_at, statement_id, proof_id").to_pylist()


def verified_proofs(store, sets: list[str] | None = None, split: str | None = "train") -> list[dict]:
    """Verified proofs of the statements of `sets` (see the module's docstring); with split "train"
    only statements training may use; None: every split (exports, reports)."""
    proofs = _proof_rows(store)
    if not proofs:
        return []
    if split == "train":
        pool = {r["statement_id"]: r for r in training_statements(store, sets)}
    else:
        pool = {}
        for r in statements(store, sets, split):
            pool.setdefault(r["statement_id"], r)
    out = []
    for p in proofs:
        s = pool.get(p["statement_id"])
        if s is None:
            continue
        out.append(
            {
                **{k: p[k] for k in COLUMNS if k not in ("set_name", "name")},
                "set": s["set"],
                "name": s["name"],
                "split": s["split"],
                "header": s["header"],
                "statement": s["statement"],
                "informal": s["informal"],
                "publish_proofs": s["publish_proofs"],
                "found_at": p["found_at"],
            }
        )
    return out


def claimed_proofs(store, sets: list[str] | None = None) -> list[dict]:
    """Statements whose set ships a proof that no verdict has accepted yet."""
    done = {p["statement_id"] for p in _proof_rows(store)}
    return [r for r in statements(store, sets) if r["claimed_proof"] and r["statement_id"] not in done]
