"""Per-step cost of adding a repository: Dojoflow's snapshot vs LeanDojo-style JSON export.

For k = 1..R, in one run on the same machine and the same synthetic data:
  * dojoflow: ingest repository k (LeanDojo export -> Parquet partition), then
    `build_snapshot(repos 1..k)` (the ids of repos 1..k-1 are looked up before the
    clock starts, as the curriculum flow has them from its earlier tasks);
  * baseline: what LeanDojo-v2 does at each step: add repository k to its one-file
    JSON database (rewritten whole), then `export_merged_data`: write the merged
    random/ and novel_premises/ splits and corpus.jsonl of repos 1..k as JSON.
Each measurement runs in a fresh subprocess so its peak RSS is its own. Reports
seconds, peak RSS (MiB) and bytes written per step (bytes passed to write calls, from
/proc/self/io: rewrites count), Python garbage collections in the snapshot/export
window (left on for both sides; counted, with their seconds, in the JSON; each side's
ingest window ends with a full collection of its own garbage), and the
snapshot/export ratio,
and writes them with the machine they were taken on (nproc, CPU model, memory,
load, Python and library versions, git commit) to
benchmarks/results/snapshot-<R>x<T>.json (atomically; `--out` to choose another path).

    .venv/bin/python benchmarks/bench_snapshot.py --repos 5 --theorems 400
    .venv/bin/python benchmarks/bench_snapshot.py --repos 10 --theorems 2000
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # benchmarks.machine

from benchmarks.machine import describe_machine, proc_field  # noqa: E402


def _dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in Path(path).rglob("*") if p.is_file()) if Path(path).exists() else 0


def _wchar() -> int | None:
    """Bytes this process has passed to write calls so far (Linux /proc/self/io): what a
    step writes, rewrites included (DuckDB rewrites catalog pages; net growth hides it)."""
    value = proc_field("/proc/self/io", "wchar:")
    return int(value) if value else None


class _GcWatch:
    """Python garbage collections (count, seconds) during the snapshot/export window of a
    step. Collection stays on, on both sides. Each side ends its ingest window with a
    full `gc.collect()`, timed as part of ingestion: otherwise the collection that the
    ingest's garbage makes due lands, at whatever allocation crosses the threshold, in
    the next window (a 20-30 ms pass in a ~4 ms snapshot at some steps, none at others)."""

    def __enter__(self):
        self.count, self.seconds, self._t = 0, 0.0, None
        gc.callbacks.append(self._on)
        return self

    def _on(self, phase, info):
        if phase == "start":
            self._t = time.perf_counter()
        elif self._t is not None:
            self.count += 1
            self.seconds += time.perf_counter() - self._t

    def __exit__(self, *exc):
        gc.callbacks.remove(self._on)

    def figures(self) -> dict:
        return {"snapshot_gc_collections": self.count, "snapshot_gc_s": self.seconds}


# -- one measured step, run in a child process ------------------------------------------
def step_dojoflow(work: Path, k: int) -> dict:
    from storage.leandojo import import_export
    from storage.snapshot import build_snapshot
    from storage.store import Store

    store = Store.open(work / "home")
    # The ids of repos 1..k-1, which the curriculum flow has from its earlier ingest tasks'
    # results: looked up before the clock starts (one pass over the store).
    urls = {r["url"]: r["repo_id"] for r in store.repositories()}
    earlier = [urls[f"https://dojoflow.invalid/synthetic/repo{i}"] for i in range(1, k)]
    before = _dir_bytes(store.root)
    return _timed_step(
        ingest=lambda: import_export(store, work / "exports" / f"repo{k}"),
        snapshot=lambda added: build_snapshot(store, earlier + [added[0].repo_id]),
        growth=lambda: _dir_bytes(store.root) - before,
    )


def step_json_baseline(work: Path, k: int) -> dict:
    """LeanDojo-v2: DynamicDatabase (one JSON file) + export_merged_data (all splits)."""
    db_path = work / "baseline" / "database.json"
    db_path.parent.mkdir(parents=True, exist_ok=True)
    out = work / "baseline" / "merged"

    def ingest() -> dict:
        db = json.loads(db_path.read_text()) if db_path.exists() else {"repositories": []}
        exp = work / "exports" / f"repo{k}"
        theorems = [t for s in ("train", "val", "test") for t in json.loads((exp / "random" / f"{s}.json").read_text())]
        corpus = [json.loads(x) for x in (exp / "corpus.jsonl").read_text().splitlines()]
        db["repositories"].append(
            {"url": theorems[0]["url"], "commit": theorems[0]["commit"], "theorems": theorems, "corpus": corpus}
        )
        db_path.write_text(json.dumps(db))
        return db

    return _timed_step(
        ingest=ingest,
        snapshot=lambda db: _export_merged_data(db, out),
        growth=lambda: _dir_bytes(out) + db_path.stat().st_size,  # both rewritten whole at every step
    )


def _timed_step(ingest: Callable[[], Any], snapshot: Callable[[Any], None], growth: Callable[[], int]) -> dict:
    """Time `ingest()`, then `snapshot(<what ingest returned>)`; the same clocks for both sides."""
    w0 = _wchar()
    t0 = time.perf_counter()
    ingested = ingest()
    gc.collect()  # the garbage of a phase is collected in that phase's window (both sides: see _GcWatch)
    t1, w1 = time.perf_counter(), _wchar()
    with _GcWatch() as gc_watch:
        snapshot(ingested)
    t2 = time.perf_counter()
    w2, grown = _wchar(), growth()
    return {
        "ingest_s": t1 - t0,
        "snapshot_s": t2 - t1,
        "growth_bytes": grown,
        "bytes_written": w2 - w0 if w0 is not None else grown,
        "snapshot_bytes_written": w2 - w1 if w0 is not None else None,
        **gc_watch.figures(),
    }


def _export_merged_data(db: dict, out: Path) -> None:
    """LeanDojo-v2's export_merged_data: the merged random/ and novel_premises/ splits
    and corpus.jsonl of every repository in the database, as JSON."""
    shutil.rmtree(out, ignore_errors=True)
    all_theorems = [t for r in db["repositories"] for t in r["theorems"]]
    all_corpus = [c for r in db["repositories"] for c in r["corpus"]]
    import random

    for kind in ("random", "novel_premises"):
        (out / kind).mkdir(parents=True)
        order = list(range(len(all_theorems)))
        random.Random(kind).shuffle(order)  # LeanDojo-v2 recomputes the splits at every step
        n = max(1, len(order) // 10)
        parts = {"val": order[:n], "test": order[n : 2 * n], "train": order[2 * n :]}
        for split, idx in parts.items():
            (out / kind / f"{split}.json").write_text(json.dumps([all_theorems[i] for i in idx]))
    with open(out / "corpus.jsonl", "w") as f:
        for c in all_corpus:
            f.write(json.dumps(c) + "\n")


def machine() -> dict:
    """Where the figures were taken, and the store format they measure."""
    # Read, not imported: importing pyarrow here would raise every child's peak RSS
    # (Linux carries the parent's high-water mark through fork and exec).
    fmt = re.search(r"^FORMAT_VERSION = (\d+)", (ROOT / "storage" / "schemas.py").read_text(), re.M)
    return {
        **describe_machine(("pyarrow", "duckdb", "pydantic")),
        "store_format_version": int(fmt.group(1)) if fmt else None,
    }


def _child(kind: str, work: str, k: int) -> None:
    result = (step_dojoflow if kind == "dojoflow" else step_json_baseline)(Path(work), k)
    result["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(result))


def _run_child(kind: str, work: Path, k: int) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--child", kind, str(work), str(k)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repos", type=int, default=5)
    ap.add_argument("--theorems", type=int, default=400)
    ap.add_argument("--tactics", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3, help="Whole sequences to run; figures are per-step medians.")
    ap.add_argument(
        "--out",
        type=Path,
        default=None,
        help="Where to write the results as JSON (default: benchmarks/results/snapshot-<R>x<T>.json).",
    )
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        return _child(a.child[0], a.child[1], int(a.child[2]))

    import statistics

    from storage.synthetic import write_synthetic_export

    where = machine()  # before the runs: the load average then is the load the runs met
    work = Path(tempfile.mkdtemp(prefix="dojoflow-bench-"))
    try:
        for k in range(1, a.repos + 1):
            write_synthetic_export(work / "exports" / f"repo{k}", f"repo{k}", a.theorems, a.tactics, seed=k)
        runs = []
        for _rep in range(a.repeat):
            for sub in ("home", "baseline"):
                shutil.rmtree(work / sub, ignore_errors=True)
            runs.append([(_run_child("dojoflow", work, k), _run_child("json", work, k)) for k in range(1, a.repos + 1)])

        def median(side: int, k: int) -> dict:
            samples = [run[k - 1][side] for run in runs]
            values = {key: [s[key] for s in samples] for key in samples[0]}
            return {key: statistics.median(v) if None not in v else None for key, v in values.items()}

        rows = []
        print(
            f"{a.repos} repositories x {a.theorems} theorems x ~{a.tactics} tactics; medians of {a.repeat} runs; "
            f"{where['cpu_model']}, nproc {where['nproc']}, load {where['loadavg']}, Python {where['python']}, "
            f"pyarrow {where['versions']['pyarrow']}, duckdb {where['versions']['duckdb']}"
        )
        print(
            f"{'k':>3} {'ingest s':>9} {'snapshot s':>10} {'json db s':>10} {'json export s':>13} "
            f"{'ratio':>7} {'RSS MiB d/j':>13} {'MiB written d/j':>16} {'GCs d/j':>8}"
        )
        for k in range(1, a.repos + 1):
            d, j = median(0, k), median(1, k)
            ratio = j["snapshot_s"] / d["snapshot_s"]
            rows.append({"k": k, "dojoflow": d, "json": j, "export_over_snapshot": ratio})
            print(
                f"{k:>3} {d['ingest_s']:>9.3f} {d['snapshot_s']:>10.3f} {j['ingest_s']:>10.3f} {j['snapshot_s']:>13.3f} "
                f"{ratio:>6.1f}x {d['peak_rss_mib']:>6.0f}/{j['peak_rss_mib']:<6.0f} "
                f"{d['bytes_written'] / 2**20:>7.1f}/{j['bytes_written'] / 2**20:<7.1f} "
                f"{d['snapshot_gc_collections']:>3.0f}/{j['snapshot_gc_collections']:<4.0f}"
            )
        snaps = [r["dojoflow"]["snapshot_s"] for r in rows]
        # Step 1 also builds the catalog's `snapshots` view (the first manifest): fit the trend from step 2.
        ks, ys = list(range(2, a.repos + 1)), snaps[1:]
        slope = statistics.linear_regression(ks, ys).slope if len(ks) >= 2 else None
        print(
            f"snapshot seconds: step 1 {snaps[0]:.3f}, step 2 {snaps[1] if len(snaps) > 1 else float('nan'):.3f}, "
            f"step {a.repos} {snaps[-1]:.3f}; trend from step 2: "
            f"{'n/a' if slope is None else f'{slope * 1000:+.1f} ms per added repository'}; "
            f"JSON export at the last step is {rows[-1]['export_over_snapshot']:.1f}x the snapshot"
        )
        from storage.atomic import write_json

        out = a.out or ROOT / "benchmarks" / "results" / f"snapshot-{a.repos}x{a.theorems}.json"
        write_json(
            out,
            {
                "repos": a.repos,
                "theorems": a.theorems,
                "tactics": a.tactics,
                "repeat": a.repeat,
                "machine": where,
                "load_after": os.getloadavg() if hasattr(os, "getloadavg") else None,
                "snapshot_trend_s_per_repo": slope,
                "steps": rows,
            },
        )
        print(f"results: {out}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
