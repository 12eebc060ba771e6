"""Cold start of `dojoflow run`, as a user pays it: separate processes, wall time from exec
to exit (docs/terminal-and-server.md).

Measured in one run, median of N each (N = --repeats, default 3), interleaved:
  first       `dojoflow run CONFIG` on a fresh home (every task executes; temporary server,
              its database created and migrated);
  cached/tmp  the same again on that home (every task Cached; temporary server);
  cached/srv  the same with `dojoflow server start` running for that home;
and the breakdown of a cached run:
  imports     `python -c "import flows.curriculum"` (Prefect, DuckDB, pyarrow; no torch:
              torch, transformers, TRL, Lightning and matplotlib load inside the tasks);
  server      starting the temporary server on an existing database until it answers
              (it starts while the imports run, so a run pays max(imports, server), not the sum);
  flow        the rest: cached run minus the process's own start-up (imports, and the
              server's wait when temporary).
Targets (idle 2-core machine): cached/srv < 5 s, cached/tmp < 10 s, both < 1/5 of first.

    .venv/bin/python benchmarks/bench_cold_start.py [--config examples/sample.yaml] [--repeats 3] [--out FILE]
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
sys.path.insert(0, str(ROOT))  # benchmarks.machine, flows.runtime.server

from benchmarks.machine import describe_machine  # noqa: E402
from flows.runtime import server as servers  # noqa: E402  (imports no Prefect)
from flows.runtime.server import free_port  # noqa: E402


def env() -> dict:
    out = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "DOJOFLOW_"))}
    out.update(PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1")
    return out


def timed(args: list[str]) -> float:
    t = time.perf_counter()
    res = subprocess.run(args, cwd=ROOT, env=env(), capture_output=True, text=True, stdin=subprocess.DEVNULL)
    elapsed = time.perf_counter() - t
    if res.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed ({res.returncode}):\n{res.stdout}\n{res.stderr}")
    return elapsed


def dojoflow(*args: str) -> list[str]:
    return [sys.executable, "-m", "flows.cli", *args]


def server_start_seconds(home: Path) -> float:
    t = time.perf_counter()
    s = servers.start_temporary(home)
    servers.wait_until_up(s, home)
    elapsed = time.perf_counter() - t
    servers.stop(s)
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default=str(ROOT / "examples" / "sample.yaml"))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="dojoflow-bench-cold-"))
    times: dict[str, list[float]] = {k: [] for k in ("first", "cached/tmp", "cached/srv", "imports", "server")}
    try:
        for i in range(a.repeats):
            home = work / f"home-{i}"
            times["first"].append(timed(dojoflow("run", a.config, "--home", str(home))))
            checkpoints = sorted((home / "checkpoints").rglob("dojoflow-checkpoint.json"))
            times["cached/tmp"].append(timed(dojoflow("run", a.config, "--home", str(home))))
            times["imports"].append(timed([sys.executable, "-c", "import flows.curriculum"]))
            times["server"].append(server_start_seconds(home))
            subprocess.run(
                dojoflow("server", "start", "--home", str(home), "--port", str(free_port())),
                cwd=ROOT,
                env=env(),
                check=True,
                capture_output=True,
            )
            try:
                times["cached/srv"].append(timed(dojoflow("run", a.config, "--home", str(home))))
            finally:
                subprocess.run(
                    dojoflow("server", "stop", "--home", str(home)),
                    cwd=ROOT,
                    env=env(),
                    check=False,
                    capture_output=True,
                )
            again = sorted((home / "checkpoints").rglob("dojoflow-checkpoint.json"))
            if again != checkpoints:
                raise SystemExit("a cached rerun trained again: the figures would not be of cached runs")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    med = {k: round(statistics.median(v), 2) for k, v in times.items()}
    result = {
        "config": str(Path(a.config).resolve().relative_to(ROOT))
        if Path(a.config).resolve().is_relative_to(ROOT)
        else a.config,
        "repeats": a.repeats,
        "median_seconds": med,
        "all_seconds": {k: [round(x, 2) for x in v] for k, v in times.items()},
        "cached_over_first": {
            "tmp": round(med["cached/tmp"] / med["first"], 3),
            "srv": round(med["cached/srv"] / med["first"], 3),
        },
        "breakdown_cached_tmp": {
            "imports": med["imports"],
            "server": med["server"],
            "flow_and_rest": round(med["cached/tmp"] - max(med["imports"], med["server"]), 2),
        },
        "breakdown_cached_srv": {
            "imports": med["imports"],
            "flow_and_rest": round(med["cached/srv"] - med["imports"], 2),
        },
        "machine": describe_machine(("prefect", "torch", "transformers")),
    }
    text = json.dumps(result, indent=2)
    print(text)
    if a.out:
        a.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
