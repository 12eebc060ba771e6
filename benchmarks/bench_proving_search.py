"""Proof-search throughput against the Lean REPL double with a fixed 50 ms per tactic,
with 1, 2, 4 and 8 workers: theorems per second, and parallel efficiency against 1 worker
in the same run (target: at least 80% at 4 workers).

What is timed is the project's own search, `tasks.search.best_first_search`, through the
real `repl` backend (LeanInteract launching tests/doubles/lean_process/repl_main.py through a
fake `lake`; no Lean). A worker is a thread with a backend of its own (one REPL process),
as each mapped Prefect task has; the workers take theorems from one queue. The generator
is an oracle over the store's traced tactics (a wrong tactic, then the traced one), so
generation costs nothing and the figure is the search and backend's: every expansion
runs two tactics (100 ms) and every proof found is checked whole. Each worker's REPL is
started (one theorem) before the clock starts. Figures are medians of `--repeats` runs.

    PYTHONPATH=$PWD HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/bench_proving_search.py
    PYTHONPATH=$PWD .venv/bin/python benchmarks/bench_proving_search.py --theorems 16 --workers 1 4 --repeats 1
"""

from __future__ import annotations

import argparse
import json
import queue
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.machine import describe_machine  # noqa: E402


class OracleGenerator:
    """For a state, a wrong tactic first and then the tactic traced from that state."""

    name = "oracle"

    def __init__(self, store):
        self.next = {}
        for r in store.read_table("tactics", columns=["state_before", "tactic"]).to_pylist():
            self.next.setdefault(" ".join(r["state_before"].split()), r["tactic"])

    def generate(self, queries, k):
        return [
            [("exact wrong_lemma", -0.1), (self.next.get(" ".join(q.goals.split()), "rfl"), -0.2)][:k] for q in queries
        ]

    def generate_proofs(self, queries, n):
        return [[] for _ in queries]

    def reseed(self, seed):
        pass

    def close(self):
        pass


def theorems_with_traced_proofs(store, count: int):
    from storage.tactic_text import is_sorry
    from tasks.lean import load_theorems

    sorry = {
        r["full_name"]
        for r in store.read_table("tactics", columns=["full_name", "tactic"]).to_pylist()
        if is_sorry(r["tactic"])
    }
    specs = [t for t in load_theorems(store, tactic_proofs_only=True) if t.full_name not in sorry]
    return specs[:count]


def run(workers: int, theorems, store, double, tmp: Path) -> tuple[float, int]:
    """(seconds for all theorems, theorems proved) with `workers` threads."""
    from tasks.lean import BackendSettings, open_backend
    from tasks.search import SearchBudget, best_first_search

    settings = BackendSettings(kind="repl", repl=double.options(), work_dir=str(tmp / f"work-{workers}"))
    backends = [open_backend(settings, store) for _ in range(workers)]
    generator, budget = OracleGenerator(store), SearchBudget(num_tactics=2, max_expansions=16, timeout_s=300)
    for b in backends:  # start each worker's REPL process before the clock
        best_first_search(theorems[0], b, generator, budget)
    todo: queue.Queue = queue.Queue()
    for t in theorems:
        todo.put(t)
    proved = []

    def work(backend):
        while True:
            try:
                t = todo.get_nowait()
            except queue.Empty:
                return
            proved.append(best_first_search(t, backend, generator, budget).proved)

    started = time.perf_counter()
    threads = [threading.Thread(target=work, args=(b,)) for b in backends]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    seconds = time.perf_counter() - started
    for b in backends:
        b.close()
    return seconds, sum(proved)


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--theorems", type=int, default=32)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4, 8])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--delay-ms", type=float, default=50.0)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "proving-search.json"))
    args = ap.parse_args(argv)

    from tests.doubles.lean_process import make_repl_double
    from tests.doubles.sample_store import sample_store

    tmp = Path(tempfile.mkdtemp(prefix="bench-proving-"))
    store = sample_store(tmp / "home")
    double = make_repl_double(tmp / "double", tactic_delay_ms=args.delay_ms)
    theorems = theorems_with_traced_proofs(store, args.theorems)
    rows = []
    for w in args.workers:
        times, proved = [], 0
        for _ in range(args.repeats):
            seconds, proved = run(w, theorems, store, double, tmp)
            times.append(seconds)
        median = statistics.median(times)
        rows.append(
            {
                "workers": w,
                "median_seconds": round(median, 3),
                "theorems_per_second": round(len(theorems) / median, 3),
                "proved": proved,
                "seconds": [round(t, 3) for t in times],
            }
        )
    base = rows[0]["theorems_per_second"] / rows[0]["workers"]
    for r in rows:
        r["parallel_efficiency"] = round(r["theorems_per_second"] / (base * r["workers"]), 3)
    result = {
        "benchmark": "proof search throughput against the REPL double",
        "tactic_delay_ms": args.delay_ms,
        "theorems": len(theorems),
        "repeats": args.repeats,
        "rows": rows,
        "machine": describe_machine(("lean-interact",)),
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    for r in rows:
        print(
            f"{r['workers']} workers: {r['theorems_per_second']:.2f} theorems/s (median {r['median_seconds']:.2f} s, "
            f"{r['proved']}/{len(theorems)} proved), efficiency {r['parallel_efficiency']:.0%}"
        )
    return result


if __name__ == "__main__":
    main()
