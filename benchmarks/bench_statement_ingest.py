"""Ingest of a synthetic statement set: `dojoflow import-statements` on N statements (target: 100,000
in under 60 s and under 2 GB peak), with the share of each phase and of fingerprinting.

A synthetic set in the `table` shape (Goedel-Pset / Lean Workbook style: name, statement ending
`:= by sorry`, a claimed proof on every other row, source, lean_version; header `import Mathlib`),
seeded, statements 150-300 characters like miniF2F's, all distinct. Each repeat runs in a fresh
subprocess (its peak RSS is its own) and times, in order:

  load      `datasets` reads the JSONL and the columns are mapped (reader.read_records)
  build     every row checked, ids and splits computed (build.build_table)
  write     the set's Parquet file, set.json, STATEMENT_SETS.json and the catalog views (sets.add_set)

and then, on the same statements and for the share, `contamination.fingerprint` alone (the
normalisation and hash the id is made of). Baseline in the same run: pyarrow's JSON reader on the
same file (`pyarrow.json.read_json`), the cost of only reading it.

    .venv/bin/python benchmarks/bench_statement_ingest.py --statements 100000 --repeat 3
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.machine import describe_machine  # noqa: E402

TYPES = ["ℕ", "ℤ", "ℝ"]
OPS = ["+", "*", "-"]


def synthetic_set(path: Path, n: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n):
            t = rng.choice(TYPES)
            k = rng.randint(2, 50)
            vars_ = ["a", "b", "c", "x", "y"][: rng.randint(2, 5)]
            hyps = " ".join(
                f"(h{j} : {v} {rng.choice(['<', '≤', '≠'])} {rng.randint(1, 999)})" for j, v in enumerate(vars_)
            )
            lhs = f" {rng.choice(OPS)} ".join(f"{rng.randint(1, 9)} * {v}" for v in vars_)
            statement = f"theorem syn_{i} ({' '.join(vars_)} : {t}) {hyps} :\n  {lhs} {rng.choice(OPS)} {k} ≤ {i} * {k} := by sorry"
            row = {
                "name": f"syn_{i}",
                "statement": statement,
                "proof": "by\n  nlinarith [sq_nonneg (a - b)]" if i % 2 else None,
                "source": "synthetic",
                "lean_version": "v4.15.0",
            }
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


def child(path: str, home: str) -> dict:
    """One measured ingest (runs in a fresh process)."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    from storage.contamination import fingerprint
    from storage.statement_sets.build import BuildOptions, build_table, content_hash
    from storage.statement_sets.reader import StatementSetConfig, read_records
    from storage.statement_sets.sets import add_set
    from storage.store import Store

    store = Store.open(home)
    config = StatementSetConfig(path=path, name="synthetic")
    t0 = time.perf_counter()
    records, fields, preset, _ = read_records(config)
    t1 = time.perf_counter()
    table, _ = build_table(records, path, fields, "synthetic", BuildOptions())
    meta = {"name": "synthetic", "content_hash": content_hash(table), "preset": preset}
    t2 = time.perf_counter()
    with store.writer():
        add_set(store, meta, table)
    t3 = time.perf_counter()
    statements = table.column("statement").to_pylist()
    t4 = time.perf_counter()
    for s in statements:
        fingerprint(s)
    t5 = time.perf_counter()
    import pyarrow.json as pj

    t6 = time.perf_counter()
    pj.read_json(path)
    t7 = time.perf_counter()
    return {
        "load_s": t1 - t0,
        "build_s": t2 - t1,
        "write_s": t3 - t2,
        "ingest_s": t3 - t0,
        "fingerprint_s": t5 - t4,
        "baseline_read_s": t7 - t6,
        "rows": table.num_rows,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--statements", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(*args.child)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "synthetic.jsonl"
        synthetic_set(path, args.statements)
        runs = []
        for r in range(args.repeat):
            out = subprocess.run(
                [sys.executable, __file__, "--child", str(path), str(Path(tmp) / f"home{r}")],
                capture_output=True,
                text=True,
                check=True,
            )
            runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
            print(json.dumps(runs[-1]), flush=True)
    med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    med["fingerprint_share"] = med["fingerprint_s"] / med["ingest_s"]
    med["ingest_vs_plain_read"] = med["ingest_s"] / med["baseline_read_s"]
    result = {
        "statements": args.statements,
        "repeat": args.repeat,
        "median": med,
        "runs": runs,
        "machine": describe_machine(("datasets", "pyarrow", "duckdb")),
    }
    out = args.out or ROOT / "benchmarks" / "results" / f"statement-ingest-{args.statements}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp_out = out.with_suffix(".tmp")
    tmp_out.write_text(json.dumps(result, indent=1, sort_keys=True))
    tmp_out.replace(out)
    print(json.dumps(med, indent=1))


if __name__ == "__main__":
    main()
