"""Peak memory of the LeanDojo-layout export, long-lived and in a fresh process, against an earlier Dojoflow.

Issue 15 part C: a curriculum process imports repo k into the store holding repo1..k-1,
builds the snapshot of repo1..k, then exports repo1..k in LeanDojo's layout, all in one
process. This measures, on the same synthetic data as `bench_vs_leandojo_v2.py`
(storage/synthetic.py, seeded), for this source tree and a `--baseline` tree (an earlier
Dojoflow: `git archive <commit> | tar -x -C DIR`), interleaved, each in its own subprocess:

  * long-lived: the three steps in one process, with the peak RSS of each step (Linux
    VmHWM, reset between steps through /proc/self/clear_refs) and the export's wall and
    CPU seconds;
  * fresh: the export of repo1..k alone in a new process (its peak RSS, VmHWM).

LeanDojo-v2 is not run here (its export takes minutes per run on a loaded machine): its
peak at this size is in `results/vs-leandojo-v2-10x2000-long-lived.json`.

    .venv/bin/python benchmarks/bench_export_memory.py --repos 10 --theorems 2000 --repeat 3 \\
        --baseline /tmp/dojoflow-before
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _status(key: str) -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key):
                return int(line.split()[1]) / 1024
    raise KeyError(key)


def _reset_peak() -> None:
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def _child(op: str, work: Path, k: int) -> dict:
    from storage.leandojo import import_export, write_export
    from storage.snapshot import build_snapshot
    from storage.store import Store

    store = Store.open(work / "home-step")
    ids_of = {r["name"]: r["repo_id"] for r in store.repositories()}
    out = work / "export"
    shutil.rmtree(out, ignore_errors=True)
    if op == "fresh":
        t, cpu = time.perf_counter(), time.process_time()
        write_export(store, out, [ids_of[f"repo{i}"] for i in range(1, k + 1)])
        return {"export_wall_s": time.perf_counter() - t, "export_cpu_s": time.process_time() - cpu}
    result = {"rss_start_mib": _status("VmRSS")}
    _reset_peak()
    import_export(store, work / "exports" / f"repo{k}")
    result.update(import_peak_mib=_status("VmHWM"), rss_after_import_mib=_status("VmRSS"))
    ids = [{r["name"]: r["repo_id"] for r in store.repositories()}[f"repo{i}"] for i in range(1, k + 1)]
    _reset_peak()
    build_snapshot(store, ids)
    result.update(snapshot_peak_mib=_status("VmHWM"), rss_after_snapshot_mib=_status("VmRSS"))
    _reset_peak()
    t, cpu = time.perf_counter(), time.process_time()
    write_export(store, out, ids)
    result.update(export_wall_s=time.perf_counter() - t, export_cpu_s=time.process_time() - cpu)
    result.update(export_peak_mib=_status("VmHWM"))
    return result


def _run(tree: Path, op: str, work: Path, k: int) -> dict:
    """This script's child with `tree`'s Dojoflow on the path (the baseline needs no copy of this script)."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run(
        [sys.executable, __file__, "--child", op, str(work), str(k)], env=env, capture_output=True, text=True
    )
    if out.returncode:
        raise SystemExit(f"{op} in {tree} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _prepare(work: Path, repos: int, theorems: int, tactics: int) -> None:
    """The exports, and a store holding repo1..repos-1 (`home-before`)."""
    sys.path.insert(0, str(ROOT))
    from storage.leandojo import import_export
    from storage.store import Store
    from storage.synthetic import write_synthetic_export

    for k in range(1, repos + 1):
        write_synthetic_export(work / "exports" / f"repo{k}", f"repo{k}", theorems, tactics, seed=k)
    store = Store.open(work / "home-before")
    for k in range(1, repos):
        import_export(store, work / "exports" / f"repo{k}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repos", type=int, default=10)
    ap.add_argument("--theorems", type=int, default=2000)
    ap.add_argument("--tactics", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--baseline", type=Path, required=False, help="an earlier Dojoflow source tree")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        result = _child(a.child[0], Path(a.child[1]), int(a.child[2]))
        # Not getrusage's ru_maxrss: on Linux a child starts with its parent's peak (this script's
        # parent imported the exports), while VmHWM is the process's own (reset between steps).
        peaks = [v for k, v in result.items() if k.endswith("_peak_mib")]
        result["peak_rss_mib"] = max([*peaks, _status("VmHWM")])
        print(json.dumps(result))
        return
    sys.path.insert(0, str(ROOT))
    from benchmarks.machine import describe_machine
    from storage.atomic import write_json

    where = describe_machine(("pyarrow", "duckdb"))
    trees = {"dojoflow": ROOT, **({"baseline": a.baseline.resolve()} if a.baseline else {})}
    work = Path(tempfile.mkdtemp(prefix="dojoflow-export-memory-"))
    runs: dict[str, dict[str, list]] = {side: {"long_lived": [], "fresh": []} for side in trees}
    try:
        _prepare(work, a.repos, a.theorems, a.tactics)
        for _ in range(a.repeat):
            for side, tree in trees.items():
                shutil.rmtree(work / "home-step", ignore_errors=True)
                shutil.copytree(work / "home-before", work / "home-step", symlinks=True)
                runs[side]["long_lived"].append(_run(tree, "step", work, a.repos))
                runs[side]["fresh"].append(_run(tree, "fresh", work, a.repos))  # the store the step left
                print(side, runs[side]["long_lived"][-1], runs[side]["fresh"][-1], file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    medians = {
        side: {how: {key: statistics.median(r[key] for r in rs) for key in rs[0]} for how, rs in by.items()}
        for side, by in runs.items()
    }
    out = a.out or ROOT / "benchmarks" / "results" / f"export-memory-{a.repos}x{a.theorems}.json"
    write_json(
        out,
        {
            "repos": a.repos,
            "theorems": a.theorems,
            "repeat": a.repeat,
            "machine": where,
            "load_after": os.getloadavg(),
            "baseline": str(a.baseline),
            "medians": medians,
            "runs": runs,
        },
    )
    for side, m in medians.items():
        ll, fr = m["long_lived"], m["fresh"]
        print(
            f"{side:9} long-lived: peak {ll['peak_rss_mib']:.1f} MiB (import {ll['import_peak_mib']:.1f}, snapshot "
            f"{ll['snapshot_peak_mib']:.1f}, export {ll['export_peak_mib']:.1f}), export {ll['export_wall_s']:.2f} s "
            f"wall / {ll['export_cpu_s']:.2f} s CPU; fresh export: peak {fr['peak_rss_mib']:.1f} MiB, "
            f"{fr['export_wall_s']:.2f} s wall / {fr['export_cpu_s']:.2f} s CPU"
        )
    print(f"medians of {a.repeat}; {where['cpu_model']}, nproc {where['nproc']}, load at start {where['loadavg']}")
    print(f"results: {out}")


if __name__ == "__main__":
    main()
