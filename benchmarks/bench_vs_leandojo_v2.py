"""Dojoflow against LeanDojo-v2's own code (lean-dojo-v2 1.0.9), step by step, one run.

For k = 1..R on the same synthetic LeanDojo-format data (storage/synthetic.py, seeded),
each measurement in a fresh subprocess (its peak RSS, from getrusage, is its own):
  * LeanDojo-v2, in its own venv (benchmarks/leandojo_v2_env.sh): ingest repo1..repok
    (`Repository.from_dict` on each export, in memory, as LeanDojo-v2 loads a traced
    dataset), then `DynamicDatabase.export_merged_data(repos, OUT)`: its curriculum step;
  * Dojoflow: `dojoflow import` of repo k into the store holding repo1..k-1
    (`import_export`), `build_snapshot(repo1..k)` (the curriculum step), and
    `write_export(repo1..k)` (LeanDojo JSON, what `dojoflow export` writes), each in a
    fresh process; and the three in turn in one long-lived process (`step`), whose peak
    RSS counts what the import and the snapshot left behind.
Then, once per repeat: all R exports imported in one call (`import_exports`, one
process, one commit), the store's size against LeanDojo-v2's JSON, and LeanDojo-v2's
loader (`Repository.from_dict`) reading Dojoflow's export of all R repositories.
Wall seconds and CPU seconds (user + system of the subprocess) are both reported: on a
shared machine wall time carries other people's load. Medians of --repeat interleaved
runs; results (with the machine) go to benchmarks/results/vs-leandojo-v2-<R>x<T>.json.

    bash benchmarks/leandojo_v2_env.sh
    .venv/bin/python benchmarks/bench_vs_leandojo_v2.py --repos 10 --theorems 2000 --repeat 3
    .venv/bin/python benchmarks/bench_vs_leandojo_v2.py --repos 10 --theorems 20000 --repeat 1 --last-step-only
    .venv/bin/python benchmarks/bench_vs_leandojo_v2.py --repos 10 --theorems 2000 --repeat 5 --ingest-only
    .venv/bin/python benchmarks/bench_vs_leandojo_v2.py --repos 10 --theorems 2000 --repeat 5 --ingest-only \
        --baseline /tmp/dojoflow-before   # also an earlier Dojoflow: git archive <commit> | tar -x -C /tmp/dojoflow-before
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # benchmarks.machine

from benchmarks.machine import describe_machine  # noqa: E402

PEER_VENV = ROOT / "benchmarks" / ".venv-leandojo-v2"


def _dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in Path(path).rglob("*") if p.is_file()) if Path(path).exists() else 0


# -- Dojoflow's side, in a fresh process per measurement -----------------------------------
def _dojoflow_child(op: str, work: Path, k: int) -> dict:
    from storage.leandojo import import_export, import_exports, write_export
    from storage.snapshot import build_snapshot
    from storage.store import Store

    exports = [work / "exports" / f"repo{i}" for i in range(1, k + 1)]
    if op.startswith("import-all"):
        shutil.rmtree(work / "home-all", ignore_errors=True)
        store = Store.open(work / "home-all")
        t, cpu = time.perf_counter(), time.process_time()
        import_exports(store, exports, workers=1 if op == "import-all-serial" else None)
        return {"wall_s": time.perf_counter() - t, "op_cpu_s": time.process_time() - cpu}
    if op.startswith("step"):
        return _long_lived_step(work, exports, timed=op == "step")
    store = Store.open(work / "home")
    if op == "import":
        t = time.perf_counter()
        import_export(store, exports[-1])
        return {"wall_s": time.perf_counter() - t}
    by_name = {r["name"]: r["repo_id"] for r in store.repositories()}
    ids = [by_name[f"repo{i}"] for i in range(1, k + 1)]
    if op == "snapshot":
        t = time.perf_counter()
        build_snapshot(store, ids)
        return {"wall_s": time.perf_counter() - t}
    out = work / "dojoflow-export"
    shutil.rmtree(out, ignore_errors=True)
    t = time.perf_counter()
    write_export(store, out, ids)
    return {"wall_s": time.perf_counter() - t, "bytes": _dir_bytes(out)}


def _long_lived_step(work: Path, exports: list[Path], timed: bool) -> dict:
    """One process doing what a curriculum step does, in turn: import repo k into the store
    holding repo1..k-1, build the snapshot of repo1..k, then export repo1..k in LeanDojo's
    layout. The export's time is its own; the peak RSS (added by the caller) is the whole
    process's, so it counts what the import and the snapshot left behind. `timed`: False
    only imports (the steps before the one measured, with --last-step-only)."""
    from storage.leandojo import import_export, write_export
    from storage.snapshot import build_snapshot
    from storage.store import Store

    def rss_mib() -> float:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

    store = Store.open(work / "home-step")
    t = time.perf_counter()
    import_export(store, exports[-1])
    result = {"import_s": time.perf_counter() - t, "rss_after_import_mib": rss_mib()}
    if not timed:
        return result
    by_name = {r["name"]: r["repo_id"] for r in store.repositories()}
    ids = [by_name[f"repo{i}"] for i in range(1, len(exports) + 1)]
    t = time.perf_counter()
    build_snapshot(store, ids)
    result.update(snapshot_s=time.perf_counter() - t, rss_after_snapshot_mib=rss_mib())
    out = work / "dojoflow-step-export"
    shutil.rmtree(out, ignore_errors=True)
    t, cpu = time.perf_counter(), time.process_time()
    write_export(store, out, ids)
    result.update(wall_s=time.perf_counter() - t, op_cpu_s=time.process_time() - cpu)
    return result


def _run(cmd: list[str], env: dict) -> dict:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(f"{cmd} failed:\n{out.stderr[-3000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["cpu_s"] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return result


def dojoflow(op: str, work: Path, k: int) -> dict:
    return _run([sys.executable, __file__, "--child", op, str(work), str(k)], {**os.environ, "PYTHONPATH": str(ROOT)})


def leandojo_v2(args: list[str]) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["GITHUB_ACCESS_TOKEN"] = ""  # must be set; empty: no GitHub call at import (leandojo_v2_env.sh)
    return _run([str(PEER_VENV / "bin" / "python"), str(ROOT / "benchmarks" / "leandojo_v2_side.py"), *args], env)


def one_run(work: Path, repos: int, log=None, last_step_only: bool = False) -> dict:
    for sub in ("home", "home-all", "home-step", "dojoflow-export", "leandojo-v2-export"):
        shutil.rmtree(work / sub, ignore_errors=True)
    steps = []
    for k in range(1, repos + 1):
        if last_step_only and k < repos:  # the stores as step k leaves them, nothing timed
            dojoflow("import", work, k)
            dojoflow("step-import", work, k)
            continue
        peer = leandojo_v2(["ingest", str(k), str(work / "exports"), str(work / "leandojo-v2-export")])
        peer["bytes"] = _dir_bytes(work / "leandojo-v2-export")
        step = {"k": k, "leandojo_v2": peer}
        for op in ("import", "snapshot", "export", "step"):
            step[op] = dojoflow(op, work, k)
        step["store_bytes"] = _dir_bytes(work / "home" / "store")
        steps.append(step)
        if log:
            print(
                f"k={k}: LeanDojo-v2 export {peer['export_s']:.2f} s, Dojoflow export {step['export']['wall_s']:.2f} s "
                f"(fresh process), {step['step']['wall_s']:.2f} s (long-lived, peak {step['step']['peak_rss_mib']:.0f} "
                f"MiB against {peer['peak_rss_mib']:.0f})",
                file=log,
                flush=True,
            )
    all_in_one = dojoflow("import-all", work, repos)
    serial = dojoflow("import-all-serial", work, repos)
    loads = leandojo_v2(["load", str(work / "dojoflow-export")])
    return {"steps": steps, "import_all": all_in_one, "import_all_serial": serial, "peer_loads_dojoflow_export": loads}


def summarise(runs: list, a, where: dict, input_bytes: int, out: Path) -> None:
    """Print the table of medians over `runs` and write them to `out`."""
    med = statistics.median

    def m(i: int, side: str, key: str):
        values = [r["steps"][i][side][key] for r in runs]
        if isinstance(values[0], list):  # the peer's ingest: repo k's own, the last entry
            values = [v[-1] for v in values]
        return med(values)

    rows = []
    print(
        f"{a.repos} repositories x {a.theorems} theorems x ~{a.tactics} tactics; medians of {len(runs)} runs; "
        f"{where['cpu_model']}, nproc {where['nproc']}, load at start {where['loadavg']}"
    )
    print(
        f"{'k':>3} | {'export s: LDv2 / dojo (x)':>28} | {'CPU s LDv2/dojo':>15} | {'peak MiB LDv2/dojo':>18} | "
        f"{'ingest k s: LDv2/dojo':>21} | {'snapshot s':>10} | {'MB: store / LDv2 JSON':>21}"
    )
    for i, step in enumerate(runs[0]["steps"]):
        k = step["k"]
        row = {"k": k}
        for side, key in (
            ("leandojo_v2", "export_s"),
            ("leandojo_v2", "ingest_s"),
            ("leandojo_v2", "peak_rss_mib"),
            ("leandojo_v2", "cpu_s"),
            ("leandojo_v2", "bytes"),
        ):
            row[f"leandojo_v2_{key}"] = m(i, side, key)
        for op in ("import", "snapshot", "export"):
            for key in ("wall_s", "cpu_s", "peak_rss_mib"):
                row[f"dojoflow_{op}_{key}"] = m(i, op, key)
        for key in ("wall_s", "op_cpu_s", "peak_rss_mib", "rss_after_import_mib", "rss_after_snapshot_mib"):
            row[f"dojoflow_long_lived_{key}"] = m(i, "step", key)
        row["dojoflow_export_bytes"] = m(i, "export", "bytes")
        row["store_bytes"] = med([r["steps"][i]["store_bytes"] for r in runs])
        row["export_speedup"] = row["leandojo_v2_export_s"] / row["dojoflow_export_wall_s"]
        row["long_lived_export_speedup"] = row["leandojo_v2_export_s"] / row["dojoflow_long_lived_wall_s"]
        rows.append(row)
        print(
            f"{k:>3} | {row['leandojo_v2_export_s']:>9.2f} / {row['dojoflow_export_wall_s']:>6.2f} "
            f"({row['export_speedup']:>5.1f}x) | {row['leandojo_v2_cpu_s']:>6.1f}/{row['dojoflow_export_cpu_s']:<6.1f} | "
            f"{row['leandojo_v2_peak_rss_mib']:>7.0f}/{row['dojoflow_export_peak_rss_mib']:<8.0f} | "
            f"{row['leandojo_v2_ingest_s']:>9.2f}/{row['dojoflow_import_wall_s']:<9.2f} | "
            f"{row['dojoflow_snapshot_wall_s']:>10.3f} | {row['store_bytes'] / 1e6:>8.1f} / {row['leandojo_v2_bytes'] / 1e6:<8.1f}"
        )
        print(
            f"    long-lived (import, snapshot, then export in one process): export {row['dojoflow_long_lived_wall_s']:.2f} s "
            f"({row['long_lived_export_speedup']:.1f}x), CPU {row['dojoflow_long_lived_op_cpu_s']:.2f} s, peak "
            f"{row['dojoflow_long_lived_peak_rss_mib']:.0f} MiB (after import {row['dojoflow_long_lived_rss_after_import_mib']:.0f}, "
            f"after snapshot {row['dojoflow_long_lived_rss_after_snapshot_mib']:.0f})"
        )
    peer_ingest_all = med([sum(r["steps"][-1]["leandojo_v2"]["ingest_s"]) for r in runs])
    import_all = {key: med([r["import_all"][key] for r in runs]) for key in ("wall_s", "cpu_s", "peak_rss_mib")}
    serial = {key: med([r["import_all_serial"][key] for r in runs]) for key in ("wall_s", "cpu_s", "peak_rss_mib")}
    one_by_one = med([sum(s["import"]["wall_s"] for s in r["steps"]) for r in runs])
    print(
        f"ingest of all {a.repos}: LeanDojo-v2 {peer_ingest_all:.2f} s (in memory, nothing written); Dojoflow "
        f"{import_all['wall_s']:.2f} s in one `import_exports` call (peak {import_all['peak_rss_mib']:.0f} MiB; "
        f"{serial['wall_s']:.2f} s with one process), "
        f"{one_by_one:.2f} s as {a.repos} imports"
    )
    print(
        f"input exports {input_bytes / 1e6:.1f} MB; store after {a.repos} {rows[-1]['store_bytes'] / 1e6:.1f} MB; "
        f"LeanDojo-v2 merged JSON {rows[-1]['leandojo_v2_bytes'] / 1e6:.1f} MB; "
        f"LeanDojo-v2 loads Dojoflow's export: {runs[-1]['peer_loads_dojoflow_export']}"
    )
    from storage.atomic import write_json

    write_json(
        out,
        {
            "repos": a.repos,
            "theorems": a.theorems,
            "tactics": a.tactics,
            "repeat": len(runs),
            "machine": where,
            "load_after": os.getloadavg(),
            "input_export_bytes": input_bytes,
            "steps": rows,
            "leandojo_v2_ingest_all_s": peer_ingest_all,
            "dojoflow_import_all": import_all,
            "dojoflow_import_all_one_process": serial,
            "dojoflow_import_one_by_one_s": one_by_one,
            "leandojo_v2_loads_dojoflow_export": runs[-1]["peer_loads_dojoflow_export"],
            "runs": runs,
        },
    )
    print(f"results: {out}", flush=True)


def compare_ingest(work: Path, a, where: dict) -> None:
    """Ingest of all repositories, alternating sides, medians of --repeat."""
    runs = {"leandojo_v2": [], "dojoflow": []}
    if a.baseline:  # an earlier Dojoflow (its own copy of this script's child), interleaved too
        runs["dojoflow_baseline"] = []
    for _ in range(a.repeat):
        runs["leandojo_v2"].append(leandojo_v2(["ingest-only", str(a.repos), str(work / "exports")]))
        runs["dojoflow"].append(dojoflow("import-all-serial", work, a.repos))
        if a.baseline:
            runs["dojoflow_baseline"].append(
                _run(
                    [
                        sys.executable,
                        str(a.baseline / "benchmarks" / "bench_vs_leandojo_v2.py"),
                        "--child",
                        "import-all-serial",
                        str(work),
                        str(a.repos),
                    ],
                    {**os.environ, "PYTHONPATH": str(a.baseline)},
                )
            )
    med = {
        side: {k: statistics.median(r[k] for r in rs) for k in ("wall_s", "op_cpu_s", "peak_rss_mib") if k in rs[0]}
        for side, rs in runs.items()
    }
    print(
        f"ingest of {a.repos} x {a.theorems}: medians of {a.repeat}; {where['cpu_model']}, nproc {where['nproc']}, "
        f"load at start {where['loadavg']}"
    )
    for side, m in med.items():
        print(
            f"{side:12} wall {m['wall_s']:.2f} s, CPU {m['op_cpu_s']:.2f} s"
            + (f", peak {m['peak_rss_mib']:.0f} MiB" if "peak_rss_mib" in m else "")
        )
    from storage.atomic import write_json

    out = a.out or ROOT / "benchmarks" / "results" / f"ingest-vs-leandojo-v2-{a.repos}x{a.theorems}.json"
    write_json(
        out,
        {
            "repos": a.repos,
            "theorems": a.theorems,
            "repeat": a.repeat,
            "machine": where,
            "load_after": os.getloadavg(),
            "medians": med,
            "runs": runs,
        },
    )
    if a.baseline:
        base = med["dojoflow_baseline"]["op_cpu_s"]
        print(f"Dojoflow CPU against its baseline ({a.baseline}): {base / med['dojoflow']['op_cpu_s']:.2f}x faster")
    print(f"results: {out}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repos", type=int, default=10)
    ap.add_argument("--theorems", type=int, default=2000)
    ap.add_argument("--tactics", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument(
        "--ingest-only",
        action="store_true",
        help="Only compare ingesting all repositories: LeanDojo-v2's in-memory ingest against Dojoflow's "
        "import_exports in one process, wall and CPU seconds of the operation itself.",
    )
    ap.add_argument(
        "--baseline",
        type=Path,
        default=None,
        help="With --ingest-only: also time the import of an earlier Dojoflow source tree (e.g. "
        "`git archive <commit> | tar -x -C DIR`), in the same run, interleaved.",
    )
    ap.add_argument(
        "--last-step-only",
        action="store_true",
        help="Time only step k = --repos (the stores are filled with repo1..k-1 untimed): for big sizes.",
    )
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        result = _dojoflow_child(a.child[0], Path(a.child[1]), int(a.child[2]))
        result["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(json.dumps(result))
        return
    if not (PEER_VENV / "bin" / "python").exists():
        raise SystemExit("LeanDojo-v2's venv is missing: run `bash benchmarks/leandojo_v2_env.sh` first")
    from storage.synthetic import write_synthetic_export

    where = describe_machine(("pyarrow", "duckdb", "msgspec"))
    work = Path(tempfile.mkdtemp(prefix="dojoflow-vs-leandojo-v2-"))
    try:
        for k in range(1, a.repos + 1):
            write_synthetic_export(work / "exports" / f"repo{k}", f"repo{k}", a.theorems, a.tactics, seed=k)
        input_bytes = _dir_bytes(work / "exports")
        if a.ingest_only:
            return compare_ingest(work, a, where)
        runs = []
        out = a.out or ROOT / "benchmarks" / "results" / f"vs-leandojo-v2-{a.repos}x{a.theorems}.json"
        for _rep in range(a.repeat):
            runs.append(one_run(work, a.repos, log=sys.stderr, last_step_only=a.last_step_only))
            # Figures after every run: a long run cut short still leaves the medians so far.
            summarise(runs, a, where, input_bytes, out)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
