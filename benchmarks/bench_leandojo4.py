"""The store at LeanDojo Benchmark 4's size (issue 24): import, snapshot and export of one
generated repository of ~122,000 theorems, ~260,000 tactics and ~180,000 premises
(benchmarks/gen_leandojo4.py: text lengths drawn from the sample's), each operation in
its own child process, reporting wall and CPU seconds and peak RSS (VmHWM, and VmHWM
after the process's imports, so the operation's own growth is visible). Beside them,
LeanDojo-v2 1.0.9's own ingestion of the same export (`Repository.from_dict`, in its own
venv: benchmarks/leandojo_v2_env.sh), when that venv exists.

    nice -n 10 .venv/bin/python benchmarks/bench_leandojo4.py --export /tmp/l4 [--repeat 1]
        [--memory-mb 256] [--in-memory] [--out benchmarks/results/leandojo4.json]

`--in-memory` also runs the import as it was before streaming (read_exports, then ingest).
The snapshot is a curriculum step's: the snapshot of the imported repository and of a
small second one imported after it (its parts are built at import, so the step lists them).
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

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from machine import describe_machine  # noqa: E402

LDV2 = HERE / ".venv-leandojo-v2" / "bin" / "python"


def _hwm() -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) // 1024 for line in f if line.startswith("VmHWM"))


def _child(op: str, export: Path, home: Path, memory_mb: int) -> dict:
    from storage.leandojo import import_exports, read_exports, write_export
    from storage.snapshot import build_snapshot
    from storage.store import Store

    base = _hwm()
    t, cpu = time.perf_counter(), time.process_time()
    store = Store.open(home)
    if op == "import":
        counts = import_exports(store, [export], memory_mb=memory_mb)[0].counts
    elif op == "import-in-memory":
        counts = store.ingest(read_exports([export]))[0].counts
    elif op == "snapshot":
        counts = build_snapshot(store, store.repo_ids()).counts
    elif op == "export":
        out = home / "export-out"
        shutil.rmtree(out, ignore_errors=True)
        write_export(store, out, store.repo_ids())
        counts = {"bytes": sum(p.stat().st_size for p in out.rglob("*") if p.is_file())}
    else:
        raise SystemExit(f"unknown op {op}")
    return {
        "wall_s": time.perf_counter() - t,
        "cpu_s": time.process_time() - cpu,
        "peak_rss_mib": _hwm(),
        "rss_after_imports_mib": base,
        "counts": counts,
    }


def _run(op: str, export: Path, home: Path, memory_mb: int) -> dict:
    out = subprocess.run(
        [
            sys.executable,
            __file__,
            "--child",
            op,
            "--export",
            str(export),
            "--home",
            str(home),
            "--memory-mb",
            str(memory_mb),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    if out.returncode != 0:
        raise SystemExit(f"{op} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _leandojo_v2(export: Path, work: Path) -> dict | None:
    """LeanDojo-v2's ingestion (`Repository.from_dict`) of the same export, if its venv is built."""
    if not LDV2.exists():
        return None
    (work / "ldv2").mkdir(exist_ok=True)
    link = work / "ldv2" / "repo1"
    if not link.exists():
        link.symlink_to(export)
    env = {**os.environ, "GITHUB_ACCESS_TOKEN": ""}  # must be set; empty: no GitHub call (leandojo_v2_env.sh)
    out = subprocess.run(
        [str(LDV2), str(HERE / "leandojo_v2_side.py"), "ingest-only", "1", str(work / "ldv2")],
        capture_output=True,
        text=True,
        env=env,
    )
    return json.loads(out.stdout.strip().splitlines()[-1]) if out.returncode == 0 else {"error": out.stderr[-2000:]}


def _second_repo(work: Path) -> Path:
    from storage.synthetic import write_synthetic_export

    return write_synthetic_export(work / "second", "second", 200, 3, seed=2)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--export", type=Path, required=True, help="a gen_leandojo4.py export")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--memory-mb", type=int, default=256)
    ap.add_argument("--in-memory", action="store_true", help="also run the in-memory import of before")
    ap.add_argument("--no-leandojo-v2", action="store_true")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--child")
    ap.add_argument("--home", type=Path)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(_child(a.child, a.export, a.home, a.memory_mb)))
        return
    size = sum(p.stat().st_size for p in a.export.rglob("*") if p.is_file())
    runs: dict[str, list] = {
        "import": [],
        "snapshot": [],
        "export": [],
        "import-in-memory": [],
        "leandojo_v2_ingest": [],
    }
    for _ in range(a.repeat):
        with tempfile.TemporaryDirectory(dir=a.export.parent) as tmp:
            work = Path(tmp)
            runs["import"].append(_run("import", a.export, work / "home", a.memory_mb))
            from storage.leandojo import import_export
            from storage.store import Store

            import_export(Store.open(work / "home"), _second_repo(work))  # a curriculum's next step
            runs["snapshot"].append(_run("snapshot", a.export, work / "home", a.memory_mb))
            runs["export"].append(_run("export", a.export, work / "home", a.memory_mb))
            if a.in_memory:
                runs["import-in-memory"].append(_run("import-in-memory", a.export, work / "home2", a.memory_mb))
            if not a.no_leandojo_v2:
                ldv2 = _leandojo_v2(a.export, work)
                if ldv2 is not None:
                    runs["leandojo_v2_ingest"].append(ldv2)
    medians = {
        op: {k: statistics.median(r[k] for r in rs) for k in rs[0] if isinstance(rs[0][k], (int, float))}
        for op, rs in runs.items()
        if rs and "error" not in rs[0]
    }
    result = {
        "command": " ".join(sys.argv),
        "export": str(a.export),
        "export_mib": round(size / 2**20, 1),
        "memory_mb": a.memory_mb,
        "repeat": a.repeat,
        "medians": medians,
        "runs": runs,
        "machine": describe_machine(("pyarrow", "duckdb", "msgspec")),
    }
    text = json.dumps(result, indent=2, default=str)
    print(text)
    if a.out:
        a.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
