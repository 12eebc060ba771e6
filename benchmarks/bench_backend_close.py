"""Closing a repl search backend: `backend.close()` against `close_quickly(backend)` (tasks/lean/closing.py).

LeanInteract's `LeanServer.kill` ends with a full `gc.collect()` and its `__del__` kills again, so
closing a backend walks the whole process's heap twice. This measures the close, in a process that
holds what a curriculum's (or a pytest worker's) does: torch, transformers, TRL, Prefect and the
flows imported. Each pass opens a repl backend on the Lean-process double (tests/doubles/
lean_process/; no Lean runs here), checks one proof so that a REPL server runs, and closes it;
the two closes take turns (plain, quick, plain, ...) so that the shared machine's load hits both
alike. Reports medians of CPU and wall seconds of the close and the ratio, and writes them with the
machine to benchmarks/results/backend_close.json (atomically).

    PYTHONPATH=$PWD HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/bench_backend_close.py --repeat 5
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.machine import describe_machine  # noqa: E402


def one_close(settings, store, spec, quick: bool) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of closing one started repl backend."""
    from tasks.lean.closing import close_quickly
    from tasks.lean.verified import open_verifier

    backend = open_verifier(settings.backend, store)
    backend.check_proof(spec, "omega")  # a REPL server runs, as after a search (a check not in the cache)
    cpu, wall = time.process_time(), time.perf_counter()
    close_quickly(backend) if quick else backend.close()
    del backend  # LeanServer.__del__ runs here at the latest
    return time.process_time() - cpu, time.perf_counter() - wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="closes of each kind")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "backend_close.json"))
    args = parser.parse_args()

    import prefect  # noqa: F401  # a curriculum process's heap
    import torch  # noqa: F401
    import transformers  # noqa: F401
    import trl  # noqa: F401

    import flows.curriculum  # noqa: F401
    from storage.atomic import write_json
    from tasks.lean import load_theorems
    from tasks.proving.config import ProvingSettings
    from tests.doubles.lean_process import make_repl_double
    from tests.doubles.sample_store import sample_store

    root = Path(tempfile.mkdtemp(prefix="bench-close-"))
    double = make_repl_double(root / "double")
    store = sample_store(root / "home")
    backend = {"kind": "repl", "repl": double.options(), "work_dir": str(root / "work"), "sandbox": double.sandbox()}
    settings = ProvingSettings.model_validate({"backend": backend})
    specs = iter(load_theorems(store, store.repo_ids()))  # a new check each time: none is answered from the cache
    objects = len(gc.get_objects())
    runs: dict[str, list[tuple[float, float]]] = {"close": [], "close_quickly": []}
    for _ in range(args.repeat):
        runs["close"].append(one_close(settings, store, next(specs), quick=False))
        runs["close_quickly"].append(one_close(settings, store, next(specs), quick=True))
    medians = {k: {"cpu_s": statistics.median(c for c, _ in v), "wall_s": statistics.median(w for _, w in v)}
               for k, v in runs.items()}  # fmt: skip
    result = {
        "objects_in_process": objects,
        "repeat": args.repeat,
        "medians": medians,
        "cpu_ratio": medians["close"]["cpu_s"] / max(medians["close_quickly"]["cpu_s"], 1e-9),
        "runs": runs,
        "machine": describe_machine(("torch", "transformers", "lean-interact", "prefect")),
    }
    write_json(Path(args.out), result)
    print(f"{objects} objects in the process; medians of {args.repeat}")
    for k, m in medians.items():
        print(f"  {k:14s} cpu {m['cpu_s']:.3f} s  wall {m['wall_s']:.3f} s")
    print(f"  CPU ratio close / close_quickly: {result['cpu_ratio']:.1f}x  -> {args.out}")


if __name__ == "__main__":
    main()
