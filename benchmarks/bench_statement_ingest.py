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
    wall, cpu = [time.perf_counter()], [time.process_time()]

    def mark():
        wall.append(time.perf_counter())
        cpu.append(time.process_time())

    records, fields, preset, _ = read_records(config)
    mark()
    table, _ = build_table(records, path, fields, "synthetic", BuildOptions())
    meta = {"name": "synthetic", "content_hash": content_hash(table), "preset": preset}
    mark()
    with store.writer():
        add_set(store, meta, table)
    mark()
    statements = table.column("statement").to_pylist()
    mark()
    for s in statements:
        fingerprint(s)
    mark()
    import pyarrow.json as pj

    mark()
    pj.read_json(path)
    mark()
    out = {"rows": table.num_rows, "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
    for clock, t in (("s", wall), ("cpu_s", cpu)):
        out.update(
            {
                f"load_{clock}": t[1] - t[0],
                f"build_{clock}": t[2] - t[1],
                f"write_{clock}": t[3] - t[2],
                f"ingest_{clock}": t[3] - t[0],
                f"fingerprint_{clock}": t[5] - t[4],
                f"baseline_read_{clock}": t[7] - t[6],
            }
        )
    return out


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
    med["fingerprint_share_cpu"] = med["fingerprint_cpu_s"] / med["ingest_cpu_s"]
    med["ingest_vs_plain_read_cpu"] = med["ingest_cpu_s"] / med["baseline_read_cpu_s"]
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
