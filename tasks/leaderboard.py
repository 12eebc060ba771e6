"""Results in the benchmarks' own terms: one line per run and benchmark, as the field reports it
(miniF2F, ProofNet and PutnamBench leaderboards; ../shared/ANCHORS.md, "Reporting convention").

A line: the benchmark and its variant (the fingerprint of its statements: miniF2F files differ),
`solved/total` (a statement not tried counts as unsolved: the total is the benchmark's), pass@k
with the sample budget (k, the n samples per statement as attempts x proofs per attempt, the tokens
generated), the verdict level (`kernel-replayed` or `elaborator-checked`, from a `verdict_level`
the verifier recorded, else `elaborator-checked` for a Lean backend; `replay` is no verdict and is
named as the lower bound it is), Lean and Mathlib versions (the benchmark statement set's), the
model and the checkpoint. Read from `theorem_results` (prover `model`, `benchmark` set) and the
store's benchmarks; `dojoflow leaderboard` prints them across runs, the card and the UI per run.

    dojoflow leaderboard --benchmark minif2f
"""

from __future__ import annotations

import json

from storage import catalog
from storage.statement_sets import list_sets

REPLAY = "replay"


def _rows(store, sql: str, **params) -> list[dict]:
    return catalog.query(store, sql, params=params or None).to_pylist()


def _has(store, table: str) -> bool:
    return bool(_rows(store, "SELECT count(*) AS n FROM duckdb_tables() WHERE table_name = $t", t=table)[0]["n"])


def benchmarks(store) -> dict[str, dict]:
    """{fingerprint: {name, total, lean_version, mathlib_version, publish_proofs}} of every benchmark."""
    sets = {m["name"]: m for m in list_sets(store)}
    out = {}
    folder = store.root / "benchmarks"
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        data = json.loads(path.read_text())
        s = sets.get(data["name"], {})
        out[data["fingerprint"]] = {
            "name": data["name"],
            "total": len(data["theorems"]),
            "lean_version": s.get("lean_version"),
            "mathlib_version": s.get("mathlib_version"),
            "publish_proofs": s.get("publish_proofs", True) is not False,
        }
    return out


def _verdict_level(rows: list[dict]) -> str:
    levels = sorted({r["verdict_level"] for r in rows if r.get("verdict_level")})
    if levels:
        return " + ".join(levels)
    checkers = sorted({r["checker"] for r in rows if r.get("checker")})
    if checkers == [REPLAY]:
        return "replay (traced proofs, no Lean: a lower bound)"
    return "elaborator-checked"


def _model(store, checkpoint_id: str | None) -> str:
    if not checkpoint_id or not _has(store, "checkpoints"):
        return "no checkpoint"
    found = _rows(store, "SELECT * FROM checkpoints WHERE checkpoint_id = $id", id=checkpoint_id)
    if not found:
        return checkpoint_id
    settings = json.loads(found[0].get("resolved_settings") or "{}") if found[0].get("resolved_settings") else {}
    model = (settings.get("dojoflow") or {}).get("model") or (settings.get("dojoflow") or {}).get("base_model")
    return f"{found[0]['trainer']}" + (f" on {model}" if model else "")


def _attempts(store, run_id: str) -> int | None:
    if not _has(store, "runs"):
        return None
    found = _rows(store, "SELECT config FROM runs WHERE run_id = $run", run=run_id)
    if not found or not found[0]["config"]:
        return None
    config = json.loads(found[0]["config"])
    proving = (config.get("evaluation") or {}).get("proving") or config.get("proving") or {}
    return proving.get("attempts")


def _tokens(n: float | None) -> str:
    if n is None:
        return "tokens not counted"
    return f"{n / 1e6:.2f}M tokens" if n >= 1e6 else f"{n / 1e3:.1f}k tokens" if n >= 1e3 else f"{int(n)} tokens"


def leaderboard_rows(store, benchmark: str | None = None, run_id: str | None = None) -> list[dict]:
    """One row per (run, benchmark) at the run's last step on it, each with its `line`."""
    if not _has(store, "theorem_results"):
        return []
    info = benchmarks(store)
    results = _rows(
        store,
        """SELECT * FROM theorem_results WHERE benchmark IS NOT NULL AND prover = 'model'
           AND ($run IS NULL OR run_id = $run) ORDER BY run_id, step""",
        run=run_id,
    )
    last: dict[tuple, int] = {}
    for r in results:
        last[(r["run_id"], r["benchmark"])] = r["step"]
    groups: dict[tuple, list[dict]] = {}
    for r in results:
        if r["step"] == last[(r["run_id"], r["benchmark"])]:
            groups.setdefault((r["run_id"], r["benchmark"], r["checkpoint_id"]), []).append(r)
    out = []
    for (run, fp, checkpoint), rows in groups.items():
        b = info.get(fp, {"name": fp, "total": len(rows), "lean_version": None, "mathlib_version": None})
        if benchmark is not None and b["name"] != benchmark:
            continue
        out.append(_row(store, run, fp, checkpoint, rows, b))
    return out


def _row(store, run: str, fp: str, checkpoint: str | None, rows: list[dict], b: dict) -> dict:
    total = max(b["total"], len(rows))
    tried = [r for r in rows if r["status"] != "untried"]
    solved = sum(1 for r in tried if (r["c"] or 0) > 0)
    k = max((r["k"] or 1 for r in tried), default=1)
    n = max((r["n"] or 0 for r in tried), default=0)
    pass_k = sum(r["pass_at_k"] or 0.0 for r in tried) / total if total else 0.0
    tokens = [r["tokens"] for r in tried if r.get("tokens") is not None]
    attempts = _attempts(store, run)
    per = f" = {attempts} attempts x {n // attempts}" if attempts and n and n % attempts == 0 else ""
    row = {
        "run_id": run,
        "benchmark": b["name"],
        "variant": fp,
        "solved": solved,
        "total": total,
        "untried": len(rows) - len(tried),
        "k": k,
        "pass_at_k": round(pass_k, 4),
        "samples_per_statement": n,
        "tokens": sum(tokens) if tokens else None,
        "verdict_level": _verdict_level(tried),
        "lean_version": b.get("lean_version"),
        "mathlib_version": b.get("mathlib_version"),
        "model": _model(store, checkpoint),
        "checkpoint_id": checkpoint,
    }
    row["line"] = (
        f"{b['name']} [{fp[:8]}]: {solved}/{total} solved, pass@{k} {pass_k:.1%} "
        f"(budget: {n} samples per statement{per}, {_tokens(row['tokens'])}), {row['verdict_level']}, "
        f"Lean {row['lean_version'] or 'not recorded'}, Mathlib {row['mathlib_version'] or 'not recorded'}, "
        f"model {row['model']}, checkpoint {checkpoint or 'none'}, run {run}"
        + (f"; {row['untried']} not tried" if row["untried"] else "")
    )
    return row


def record_benchmark_results(
    store, set_name: str, results: list[dict], *, run_id: str, step: int, checkpoint_id: str | None
) -> int:
    """Record an evaluation on a benchmark statement set so that it reads as a leaderboard line:
    `results` are one dict per statement tried: name, n, c, k, pass_at_1, pass_at_k, checker,
    and optionally status (`proved`/`failed`/`untried`), reason, tokens, seconds, generator.
    Statements of the set with no result count as untried (the total stays the benchmark's)."""
    from storage.ids import theorem_id
    from storage.statement_sets import set_meta, statements
    from storage.theorem_results import record_results

    meta = set_meta(store, set_name)
    fp = meta.get("benchmark_fingerprint")
    if not fp:
        from storage.errors import InputError

        raise InputError(set_name, "is not a benchmark set", "import it with --benchmark (benchmark: true)")
    group = f"benchmark:{set_name}"
    by_name = {r["name"]: r for r in results}
    rows = []
    for s in statements(store, [set_name]):
        r = by_name.get(s["name"])
        base = {
            "repo_id": group,
            "theorem_id": theorem_id(group, s["fingerprint"], s["name"]),
            "file_path": "",
            "full_name": s["name"],
            "split": "benchmark",
            "prover": "model",
            "benchmark": fp,
        }
        if r is None:
            rows.append({**base, "status": "untried", "reason": "not in this evaluation's results", "n": 0, "c": 0})
            continue
        status = r.get("status") or ("proved" if (r.get("c") or 0) > 0 else "failed")
        rows.append({**base, **{k: v for k, v in r.items() if k != "name"}, "status": status})
    return record_results(store, rows, run_id, step, checkpoint_id, "benchmark")


def card_section(store, run_id: str) -> list[str]:
    """The card's lines: this run's leaderboard lines, when it evaluated on a benchmark."""
    rows = leaderboard_rows(store, run_id=run_id)
    if not rows:
        return []
    out = ["## Benchmarks, as the field reports them", ""]
    out += [f"- {r['line']}" for r in rows]
    return out + [""]


def unpublished(store) -> dict[str, set]:
    """What must not leave the store: {"groups": {"benchmark:NAME"}, "statement_ids": {...}} of the
    statement sets marked publish_proofs: false."""
    from storage.statement_sets import read_statements

    names = [m["name"] for m in list_sets(store) if m.get("publish_proofs") is False]
    ids = (
        set(read_statements(store, names, columns=["statement_id"]).column("statement_id").to_pylist())
        if names
        else set()
    )
    return {"groups": {f"benchmark:{n}" for n in names}, "statement_ids": ids}
