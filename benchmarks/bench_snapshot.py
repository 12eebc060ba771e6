"""Per-step cost of adding a repository: Dojoflow's snapshot vs LeanDojo-style JSON export.

For k = 1..R, in one run on the same machine and the same synthetic data:
  * dojoflow: ingest repository k (LeanDojo export -> Parquet partition), then
    `build_snapshot(repos 1..k)`;
  * baseline: what LeanDojo-v2 does at each step: add repository k to its one-file
    JSON database (rewritten whole), then `export_merged_data`: write the merged
    random/ and novel_premises/ splits and corpus.jsonl of repos 1..k as JSON.
Each measurement runs in a fresh subprocess so its peak RSS is its own. Reports
seconds, peak RSS (MiB) and bytes written per step, and the snapshot/export ratio.

    .venv/bin/python benchmarks/bench_snapshot.py --repos 5 --theorems 400
    .venv/bin/python benchmarks/bench_snapshot.py --repos 10 --theorems 2000 --out benchmarks/results/snapshot-10x2000.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in Path(path).rglob("*") if p.is_file()) if Path(path).exists() else 0


# -- one measured step, run in a child process ------------------------------------------
def step_dojoflow(work: Path, k: int) -> dict:
    from storage.leandojo import import_export
    from storage.snapshot import build_snapshot
    from storage.store import Store

    store = Store.open(work / "home")
    before = _dir_bytes(store.root)
    t0 = time.perf_counter()
    import_export(store, work / "exports" / f"repo{k}")
    t1 = time.perf_counter()
    ids = [store.find_repositories(f"https://dojoflow.invalid/synthetic/repo{i}")[0]["repo_id"] for i in range(1, k + 1)]
    build_snapshot(store, ids)
    t2 = time.perf_counter()
    return {"ingest_s": t1 - t0, "snapshot_s": t2 - t1, "bytes_written": _dir_bytes(store.root) - before}


def step_json_baseline(work: Path, k: int) -> dict:
    """LeanDojo-v2: DynamicDatabase (one JSON file) + export_merged_data (all splits)."""
    db_path = work / "baseline" / "database.json"
    db_path.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    db = json.loads(db_path.read_text()) if db_path.exists() else {"repositories": []}
    exp = work / "exports" / f"repo{k}"
    theorems = [t for s in ("train", "val", "test") for t in json.loads((exp / "random" / f"{s}.json").read_text())]
    corpus = [json.loads(x) for x in (exp / "corpus.jsonl").read_text().splitlines()]
    db["repositories"].append({"url": theorems[0]["url"], "commit": theorems[0]["commit"],
                               "theorems": theorems, "corpus": corpus})
    db_path.write_text(json.dumps(db))
    t1 = time.perf_counter()
    out = work / "baseline" / "merged"
    shutil.rmtree(out, ignore_errors=True)
    all_theorems = [t for r in db["repositories"] for t in r["theorems"]]
    all_corpus = [c for r in db["repositories"] for c in r["corpus"]]
    import random

    for kind in ("random", "novel_premises"):
        (out / kind).mkdir(parents=True)
        order = list(range(len(all_theorems)))
        random.Random(kind).shuffle(order)  # LeanDojo-v2 recomputes the splits at every step
        n = max(1, len(order) // 10)
        parts = {"val": order[:n], "test": order[n:2 * n], "train": order[2 * n:]}
        for split, idx in parts.items():
            (out / kind / f"{split}.json").write_text(json.dumps([all_theorems[i] for i in idx]))
    with open(out / "corpus.jsonl", "w") as f:
        for c in all_corpus:
            f.write(json.dumps(c) + "\n")
    t2 = time.perf_counter()
    return {"ingest_s": t1 - t0, "snapshot_s": t2 - t1, "bytes_written": _dir_bytes(out) + db_path.stat().st_size}


def _child(kind: str, work: str, k: int) -> None:
    result = (step_dojoflow if kind == "dojoflow" else step_json_baseline)(Path(work), k)
    result["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(result))


def _run_child(kind: str, work: Path, k: int) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", kind, str(work), str(k)], cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repos", type=int, default=5)
    ap.add_argument("--theorems", type=int, default=400)
    ap.add_argument("--tactics", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3, help="Whole sequences to run; figures are per-step medians.")
    ap.add_argument("--out", type=Path, default=None, help="Also write the results as JSON here.")
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        return _child(a.child[0], a.child[1], int(a.child[2]))

    from storage.synthetic import write_synthetic_export

    import statistics

    work = Path(tempfile.mkdtemp(prefix="dojoflow-bench-"))
    try:
        for k in range(1, a.repos + 1):
            write_synthetic_export(work / "exports" / f"repo{k}", f"repo{k}", a.theorems, a.tactics, seed=k)
        runs = []
        for rep in range(a.repeat):
            for sub in ("home", "baseline"):
                shutil.rmtree(work / sub, ignore_errors=True)
            runs.append([(_run_child("dojoflow", work, k), _run_child("json", work, k)) for k in range(1, a.repos + 1)])

        def median(side: int, k: int) -> dict:
            samples = [run[k - 1][side] for run in runs]
            return {key: statistics.median(s[key] for s in samples) for key in samples[0]}

        rows = []
        print(f"{a.repos} repositories x {a.theorems} theorems x ~{a.tactics} tactics; medians of {a.repeat} runs; "
              f"{platform.platform()}, {os.cpu_count()} CPUs, Python {platform.python_version()}")
        print(f"{'k':>3} {'ingest s':>9} {'snapshot s':>10} {'json db s':>10} {'json export s':>13} "
              f"{'ratio':>7} {'RSS MiB d/j':>13} {'MiB written d/j':>16}")
        for k in range(1, a.repos + 1):
            d, j = median(0, k), median(1, k)
            ratio = j["snapshot_s"] / d["snapshot_s"]
            rows.append({"k": k, "dojoflow": d, "json": j, "export_over_snapshot": ratio})
            print(f"{k:>3} {d['ingest_s']:>9.3f} {d['snapshot_s']:>10.3f} {j['ingest_s']:>10.3f} {j['snapshot_s']:>13.3f} "
                  f"{ratio:>6.1f}x {d['peak_rss_mib']:>6.0f}/{j['peak_rss_mib']:<6.0f} "
                  f"{d['bytes_written'] / 2**20:>7.1f}/{j['bytes_written'] / 2**20:<7.1f}")
        snaps = [r["dojoflow"]["snapshot_s"] for r in rows]
        print(f"snapshot seconds, first vs last step: {snaps[0]:.3f} -> {snaps[-1]:.3f}; "
              f"JSON export at the last step is {rows[-1]['export_over_snapshot']:.1f}x the snapshot")
        if a.out:
            a.out.parent.mkdir(parents=True, exist_ok=True)
            a.out.write_text(json.dumps({"repos": a.repos, "theorems": a.theorems, "tactics": a.tactics,
                                         "machine": {"platform": platform.platform(), "cpus": os.cpu_count()},
                                         "steps": rows}, indent=2))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
