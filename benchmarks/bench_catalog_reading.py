"""Catalog reads one connection each against back to back in one `catalog.reading` batch
(storage/catalog.py): the CPU a run's report, card and regression checks pay per query.

A store with one synthetic repository and a few metric rows; K = --queries reads of the
metrics table (what `metrics.of_run`, the run ledger and the card issue), each either in its
own connection (open, lock-down, views check, close) or all in one batch. Interleaved,
--repeats times; medians of CPU seconds (this process's user+sys), not wall: the machine is shared.

    .venv/bin/python benchmarks/bench_catalog_reading.py [--queries 25] [--repeats 5] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.machine import describe_machine  # noqa: E402
from storage import atomic, catalog, metrics  # noqa: E402
from storage.leandojo import import_export  # noqa: E402
from storage.store import Store  # noqa: E402
from storage.synthetic import write_synthetic_export  # noqa: E402

SQL = "SELECT count(*) AS n FROM metrics WHERE run_id = $run"


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _separate(store, k: int) -> float:
    t = _cpu()
    for _ in range(k):
        catalog.query(store, SQL, {"run": "r"})
    return _cpu() - t


def _batched(store, k: int) -> float:
    t = _cpu()
    with catalog.reading(store):
        for _ in range(k):
            catalog.query(store, SQL, {"run": "r"})
    return _cpu() - t


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--queries", type=int, default=25)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "catalog_reading.json")
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store = Store.open(Path(tmp) / "home")
        import_export(store, write_synthetic_export(Path(tmp) / "e", "alpha", 20, 3))
        row = {"repo_id": "alpha", "trainer": "sft", "split_kind": "repo", "split": "test", "value": 0.5}
        metrics.record(store, [{**row, "metric": f"m{i}", "checkpoint_id": "c"} for i in range(6)], "r", 0, "alpha")
        _separate(store, 2), _batched(store, 2)  # warm
        separate, batched = [], []
        for _ in range(a.repeats):
            separate.append(_separate(store, a.queries))
            batched.append(_batched(store, a.queries))
    s, b = statistics.median(separate), statistics.median(batched)
    result = {
        "queries": a.queries,
        "repeats": a.repeats,
        "separate_cpu_s": separate,
        "batched_cpu_s": batched,
        "median_separate_ms_per_query": round(1000 * s / a.queries, 2),
        "median_batched_ms_per_query": round(1000 * b / a.queries, 2),
        "ratio_batched_to_separate": round(b / s, 3),
        "machine": describe_machine(("duckdb", "pyarrow")),
    }
    print(
        f"{a.queries} queries, median of {a.repeats}: separate {1000 * s:.0f} ms CPU, one batch {1000 * b:.0f} ms CPU"
    )
    print(
        f"per query {result['median_separate_ms_per_query']} -> {result['median_batched_ms_per_query']} ms; ratio {result['ratio_batched_to_separate']}"
    )
    atomic.write_text(a.out, json.dumps(result, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
