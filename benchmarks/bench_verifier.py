"""Checks per second through Dojoflow's verifier (tasks/lean/verified.py over the `repl` backend,
LeanInteract, and over the real kimina server package), against the Lean process double answering
every whole-proof check after a fixed latency: 1, 2 and 4 workers, cold (every check reaches the
double) and with the verification cache warm (none does), and the per-check time Dojoflow adds
(target: under 5 ms). That overhead is measured against a baseline in the same run, with the
same number of workers: for repl, LeanInteract alone (`LeanInteractAlone`: the same config,
header env and command text, nothing of Dojoflow); for kimina, the same snippets POSTed to the
same server with httpx (`KiminaAlone`). Baseline passes take turns with the backend's, so that
the shared machine's load hits both alike; medians over every check of every pass (`--repeat`).

Lean's own checking time is NOT measured here: no Lean runs on these machines. The double is a
Python process that answers after `--latency-ms` (its `late` fault, tests/doubles/lean_process/
faults.py, used as a measurement knob, not as Lean behaviour). What real checking costs is
kimina-lean-server's technical report's figure, 0.07 to 0.10 proofs/s per CPU with Lean and
Mathlib (arXiv 2504.21230); the figures here only say how much Dojoflow's own machinery takes on
top of that, and how much the cache saves when a proof comes back.

    PYTHONPATH=$PWD HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/bench_verifier.py
    PYTHONPATH=$PWD HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/bench_verifier.py --checks 24 --latency-ms 50 --backends repl

Writes benchmarks/results/verifier.json (atomically).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.machine import describe_machine  # noqa: E402

PROOFS = ("rfl", "simp", "omega", "decide", "trivial", "exact rfl", "simp_all", "constructor")


def workload(theorems: dict, n: int) -> list[tuple]:
    """`n` distinct (theorem, proof) checks over the sample's theorems (most are rejections,
    which is what a policy mostly emits; the double answers each as Lean's transcripts do)."""
    items = [(t, p) for p in PROOFS for t in theorems.values()]
    return items[:n]


def run_passes(verifier, items, workers: int, repeat: int, before=None) -> tuple[float, list[float], float]:
    """`run_pass` `repeat` times (calling `before()` first each time): total wall, all per-check
    times, total CPU. The machine is shared: medians over several passes."""
    wall, times, cpu = 0.0, [], 0.0
    for _ in range(repeat):
        if before is not None:
            before()
        w, t, c = run_pass(verifier, items, workers)
        wall, cpu = wall + w, cpu + c
        times.extend(t)
    return wall, times, cpu


def run_pass(verifier, items, workers: int) -> tuple[float, list[float], float]:
    """(wall seconds, per-check seconds, CPU seconds of this process) for one pass over `items`."""
    times: list[float] = []
    errors: list[str] = []

    def one(item):
        started = time.perf_counter()
        check = verifier.check_proof(*item)
        times.append(time.perf_counter() - started)
        if check.error is not None:
            errors.append(check.error)

    cpu = time.process_time()
    started = time.perf_counter()
    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(one, items))
    if errors:
        raise RuntimeError(f"{len(errors)} checks failed, e.g. {errors[0]}")
    return time.perf_counter() - started, times, time.process_time() - cpu


def figures(kind: str, workers: int, mode: str, latency: float, items, wall, times, cpu, hits: int) -> dict:
    med = statistics.median(times)
    items = times  # every check of every pass
    return {
        "backend": kind,
        "workers": workers,
        "mode": mode,
        "checks": len(items),
        "cache_hits": hits,
        "wall_s": round(wall, 3),
        "checks_per_s": round(len(items) / wall, 2),
        "checks_per_s_per_worker": round(len(items) / wall / workers, 2),
        "median_check_ms": round(med * 1000, 2),
        "median_over_latency_ms": round((med - latency) * 1000, 2) if mode != "warm" else None,
        "dojoflow_cpu_ms_per_check": round(cpu / len(items) * 1000, 2),
    }


class LeanInteractAlone:
    """The baseline: LeanInteract alone, with the same config, header env and command text as the
    repl backend's whole-proof check, and nothing of Dojoflow around it (no guard, no verdict, no
    cache): an `AutoLeanServer` for one worker, a `LeanServerPool` with the header in its session
    cache for several (as the repl backend uses them)."""

    def __init__(self, backend, theorem, workers: int):
        from lean_interact import AutoLeanServer, LeanServerPool

        self.project = backend._project(theorem)
        if workers == 1:
            self.server = AutoLeanServer(self.project.config)
        else:
            self.server = LeanServerPool(self.project.config, num_workers=workers)
        self.envs: dict[tuple, int] = {}

    def check_proof(self, theorem, proof):
        from types import SimpleNamespace

        from lean_interact import Command, LeanServerPool

        from tasks.lean.repl import check_tail
        from tasks.lean.source import check_alias, file_header

        spot = (theorem.file_path, theorem.start)
        if spot not in self.envs:
            self.envs[spot] = self.server.run(Command(cmd=file_header(theorem, self.project.directory))).env
        reply = self.server.run(Command(cmd=check_tail(theorem, proof, check_alias()), env=self.envs[spot]), timeout=60)
        if isinstance(self.server, LeanServerPool):
            self.server.session_cache.remove(reply.env)
        return SimpleNamespace(error=None)

    def close(self):
        if hasattr(self.server, "close"):
            self.server.close()
        else:
            self.server.kill()


class KiminaAlone:
    """The kimina baseline: the same snippets (built before timing), POSTed to the same server with
    httpx, the answer parsed as JSON and nothing else (no guard, no verdict, no cache)."""

    def __init__(self, backend, items):
        import httpx

        self.client = httpx.Client(base_url=backend.opts.url.rstrip("/"), headers=backend.client.headers, timeout=120)
        self.codes = {(t.full_name, p): backend._snippet(t, p, f"alone-{i}").code for i, (t, p) in enumerate(items)}

    def check_proof(self, theorem, proof):
        from types import SimpleNamespace

        body = {"snippets": [{"id": "1", "code": self.codes[theorem.full_name, proof]}], "timeout": 60}
        res = self.client.post("/api/check", json={**body, "debug": False, "reuse": True})
        error = res.json()["results"][0].get("error") if res.is_success else f"HTTP {res.status_code}"
        return SimpleNamespace(error=error)

    def close(self):
        self.client.close()


def interleaved(first, second, items, workers: int, repeat: int):
    """`repeat` passes of each, taking turns (first, second, first, ...), so that the machine's
    load changes hit both alike: each one's (wall, per-check times, CPU)."""
    a, b = (0.0, [], 0.0), (0.0, [], 0.0)
    for _ in range(repeat):
        w, t, c = run_pass(first, items, workers)
        a = (a[0] + w, a[1] + t, a[2] + c)
        w, t, c = run_pass(second, items, workers)
        b = (b[0] + w, b[1] + t, b[2] + c)
    return a, b


def baseline_row(kind: str, workers: int, latency: float, base, uncached: dict) -> dict:
    wall, times, cpu = base
    med = statistics.median(times)
    return {
        "backend": "leaninteract-alone" if kind == "repl" else "kimina-server-alone",
        "workers": workers,
        "mode": "baseline",
        "checks": len(times),
        "checks_per_s": round(len(times) / wall, 2),
        "checks_per_s_per_worker": round(len(times) / wall / workers, 2),
        "median_check_ms": round(med * 1000, 2),
        "median_over_latency_ms": round((med - latency) * 1000, 2),
        "dojoflow_cpu_ms_per_check": round(cpu / len(times) * 1000, 2),
        "dojoflow_overhead_ms": round(uncached["median_check_ms"] - med * 1000, 2),
        "dojoflow_overhead_ratio": round(uncached["median_check_ms"] / (med * 1000), 3),
        "dojoflow_cpu_overhead_ms": round(uncached["dojoflow_cpu_ms_per_check"] - cpu / len(times) * 1000, 2),
    }


def measure(kind, settings, store, items, workers, latency, rows, double, repeat: int) -> None:
    """Uncached, then cached cold, then cached warm, on one opened backend."""
    from tasks.lean.verified import VerifiedBackend, header_text, open_verifier

    backend = open_verifier(settings, store)
    assert isinstance(backend, VerifiedBackend)
    backend.rule_version = f"bench-{uuid.uuid4().hex[:8]}"  # a key space of this run alone: cold means cold
    raw = backend.backend
    alone = LeanInteractAlone(raw, items[0][0], workers) if kind == "repl" else KiminaAlone(raw, items)
    try:
        run_pass(raw, items[:workers], workers)  # start the processes (and their headers) before timing
        run_pass(alone, items[:workers], workers)
        # the backend and its baseline take turns, pass by pass
        (wall, times, cpu), base = interleaved(raw, alone, items, workers, repeat)
        rows.append(figures(kind, workers, "uncached", latency, items, wall, times, cpu, 0))
        rows.append(baseline_row(kind, workers, latency, base, rows[-1]))

        def fresh_key_space():  # cold: a rule version no answer was stored under
            backend.rule_version = f"bench-{uuid.uuid4().hex[:8]}"
            backend._known, backend._watermark = None, None
            backend.flush()  # the first load, outside the timing (once per process)

        hits, before = backend.stats.hits, len(double.requests())
        wall, times, cpu = run_passes(backend, items, workers, repeat, fresh_key_space)
        rows.append(figures(kind, workers, "cold", latency, items, wall, times, cpu, backend.stats.hits - hits))
        # what reached the double per check: 1 when every header is warm in its process
        rows[-1]["requests_per_check"] = round((len(double.requests()) - before) / len(times), 2)
        started = time.perf_counter()  # what a sync costs (one per `sync_every` new answers)
        backend.flush()
        rows[-1]["sync_ms"] = round((time.perf_counter() - started) * 1000, 1)
        rows[-1]["sync_every"] = backend.sync_every
        hits = backend.stats.hits
        wall, times, cpu = run_passes(backend, items, workers, repeat)
        rows.append(figures(kind, workers, "warm", latency, items, wall, times, cpu, backend.stats.hits - hits))
        assert header_text(settings, items[0][0])  # the key's header was read from the checkout
    finally:
        alone.close()
        backend.close()


def print_table(rows: list[dict]) -> None:
    print(
        f"{'backend':8} {'w':>2} {'mode':9} {'checks/s':>9} {'/worker':>8} {'median ms':>10} {'over lat.':>9} {'cpu ms':>7}"
    )
    for r in rows:
        r = {"checks_per_s": "", "checks_per_s_per_worker": "", "dojoflow_cpu_ms_per_check": "", **r}
        over = "" if r["median_over_latency_ms"] is None else r["median_over_latency_ms"]
        print(
            f"{r['backend']:8} {r['workers']:>2} {r['mode']:9} {r['checks_per_s']:>9} {r['checks_per_s_per_worker']:>8} "
            f"{r['median_check_ms']:>10} {over:>9} {r['dojoflow_cpu_ms_per_check']:>7}"
        )


def gold_run(store, theorems: dict, tmp: Path, steps: int, group: int) -> dict:
    """The gold check over a GRPO-like run on the doubles (tests/doubles/comparator_double.py and
    the Lean process double): each step, every theorem with a known proof gets `group` completions,
    one its known proof and the rest wrong proofs (what a policy mostly emits), checked and judged
    as the rewards do. Dojoflow's own overhead per replayed proof is the gate's time on a miss less
    the comparator process's own wall time (measured around it, GoldResult.seconds): writing the
    project, starting the process, reading its answer, the cache."""
    from storage.sample.content.known_proofs import KNOWN_PROOFS
    from tasks.lean import BackendSettings, check_proofs, judge
    from tasks.lean.verified import open_verifier
    from tests.doubles.comparator_double import make_comparator_double
    from tests.doubles.lean_process import make_repl_double

    double = make_repl_double(tmp / "gold-double")
    bin_dir = make_comparator_double(tmp / "gold-bin")
    gold = {
        "check": "on",
        "comparator_path": str(bin_dir / "comparator"),
        "lean4export_path": str(bin_dir / "lean4export"),
    }
    settings = BackendSettings(
        kind="repl", work_dir=str(tmp / "gold-work"), repl=double.options(), sandbox=double.sandbox(), gold=gold
    )
    known = [(theorems[k.full_name], "\n".join(k.tactics)) for k in KNOWN_PROOFS if k.full_name in theorems][:4]
    backend = open_verifier(settings, store)
    gate = backend.gold
    miss_s, hit_s, own_s, paid = [], [], [], 0
    original = gate._gold_result

    def timed(theorem, proof):
        runs_before, t0 = gate.gold_stats["gold_runs"], time.perf_counter()
        result = original(theorem, proof)
        elapsed = time.perf_counter() - t0
        if gate.gold_stats["gold_runs"] > runs_before:
            miss_s.append(elapsed)
            own_s.append(elapsed - result.seconds)  # all but the comparator process itself
        else:
            hit_s.append(elapsed)
        return result

    gate._gold_result = timed
    try:
        for _ in range(steps):
            items = [item for t, proof in known for item in [(t, proof)] + [(t, p) for p in PROOFS[: group - 1]]]
            for (_theorem, proof), check in zip(items, check_proofs(backend, items)):
                paid += judge(check, proof).proved
    finally:
        backend.close()
    stats = gate.gold_stats
    candidates = steps * len(known) * group
    return {
        "steps": steps,
        "group": group,
        "candidates": candidates,
        "accepted_by_fast_backend": stats["gold_runs"] + stats["gold_hits"],
        "reached_comparator": stats["gold_runs"],
        "never_reached_comparator": stats["passed_through"],
        "cache_hit_rate": stats["gold_hits"] / max(1, stats["gold_runs"] + stats["gold_hits"]),
        "paid": paid,
        "miss_median_ms": statistics.median(miss_s) * 1000 if miss_s else None,
        "hit_median_ms": statistics.median(hit_s) * 1000 if hit_s else None,
        "dojoflow_overhead_per_replayed_proof_ms": statistics.median(own_s) * 1000 if own_s else None,
        "sandbox": gate.runner.sandbox,
    }


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--home", default=None, help="store home (default: a new temporary folder)")
    ap.add_argument("--checks", type=int, default=24, help="distinct checks per pass")
    ap.add_argument("--latency-ms", type=float, default=50.0, help="the double's answer delay per whole-proof check")
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument("--repeat", type=int, default=3, help="passes per mode (medians over all of them)")
    ap.add_argument("--backends", nargs="+", default=["repl", "kimina"], choices=["repl", "kimina"])
    ap.add_argument(
        "--order",
        default="mixed",
        choices=["mixed", "by-file"],
        help="mixed: files in turn (each check under another header); by-file: a file's checks together",
    )
    ap.add_argument("--gold-steps", type=int, default=4, help="GRPO-like steps of the gold-check run (0: skip)")
    ap.add_argument("--gold-group", type=int, default=8, help="completions per theorem and step in that run")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "verifier.json"))
    args = ap.parse_args(argv)

    from storage.atomic import write_json
    from tasks.lean import BackendSettings, load_theorems
    from tests.doubles.lean_process import make_repl_double
    from tests.doubles.sample_store import sample_store

    tmp = Path(tempfile.mkdtemp(prefix="bench-verifier-"))
    store = sample_store(Path(args.home) if args.home else tmp / "home")
    theorems = {t.full_name: t for t in load_theorems(store, store.repo_ids())}
    items = workload(theorems, args.checks)
    if args.order == "by-file":
        items.sort(key=lambda item: item[0].file_path)
    latency = args.latency_ms / 1000
    late = {"when": "#print axioms", "do": "late", "seconds": latency}  # a measurement knob (module docstring)
    rows: list[dict] = []
    machine_before = describe_machine(("lean-interact", "duckdb"))

    double = make_repl_double(tmp / "double")
    double.faults(late)
    for w in args.workers if "repl" in args.backends else []:
        settings = BackendSettings(
            kind="repl", workers=w, work_dir=str(tmp / "work"), repl=double.options(), sandbox=double.sandbox()
        )
        measure("repl", settings, store, items, w, latency, rows, double, args.repeat)

    if "kimina" in args.backends:
        from tests.doubles.kimina_server import API_KEY, kimina_server

        os.environ.setdefault("DOJOFLOW_KIMINA_PYTHON", str(Path("/work/main/.kimina-venv/bin/python")))
        os.environ["LEAN_SERVER_API_KEY"] = API_KEY
        for w in args.workers:
            with kimina_server(tmp / f"kimina-{w}", api_key=API_KEY, max_repls=w) as server:
                server.repl.faults(late)
                options = {"url": server.url, "batch_size": 1}
                settings = BackendSettings(kind="kimina", workers=w, kimina=options)
                measure("kimina", settings, store, items, w, latency, rows, server.repl, args.repeat)

    gold = gold_run(store, theorems, tmp, args.gold_steps, args.gold_group) if args.gold_steps else None
    result = {
        "gold": gold,
        "latency_ms": args.latency_ms,
        "checks": len(items),
        "repeat": args.repeat,
        "order": args.order,
        "rows": rows,
        "machine": machine_before,
        "loadavg_after": os.getloadavg(),
        "note": "Lean's own checking time is not measured (no Lean here): the Lean process is a double "
        "answering after latency_ms. Real checking: 0.07-0.10 proofs/s per CPU with Lean and Mathlib "
        "(kimina-lean-server technical report).",
    }
    write_json(Path(args.out), result)
    shutil.rmtree(tmp, ignore_errors=True)
    print_table(rows)
    if gold:
        print(
            "gold check (comparator double):", {k: round(v, 3) if isinstance(v, float) else v for k, v in gold.items()}
        )
    return result


if __name__ == "__main__":
    main()
