"""Orchestration overhead of the curriculum flow on the sample: first run, fully
cached rerun, and the share of wall time that is Prefect rather than the work.

One process, Prefect's embedded server, a fresh DOJOFLOW_HOME:
  1. first run: every task executes (ingest, snapshots, SFT training, evaluation);
  2. second run: every task is Cached;
then from the Prefect API: the flow run's duration and the summed durations of its
task runs. "Work" is the time inside task runs; "Prefect" is the rest of the wall
time (engine, API calls, cache lookups, artifacts, the flow body's own bookkeeping).
The embedded server is started (and its database migrated) by a warm-up flow before
anything is timed, and its start is reported on its own, so both runs pay the same.
The script fails if the second run executed any cached task (ingest, snapshot,
train, evaluate) instead of reading its cached result.
Target: the cached rerun takes under a fifth of the first run.

    .venv/bin/python benchmarks/bench_orchestration.py [--config examples/sample.yaml] [--out FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # benchmarks.machine


def _task_seconds(flow_run_id) -> tuple[float, float, dict]:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    async def read():
        async with get_client() as client:
            fr = await client.read_flow_run(flow_run_id)
            trs = await client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])))
            return fr, trs

    fr, trs = asyncio.run(read())
    states = {}
    for t in trs:
        states[t.state.name] = states.get(t.state.name, 0) + 1
    task_total = sum((t.end_time - t.start_time).total_seconds() for t in trs if t.start_time and t.end_time)
    flow_total = (fr.end_time - fr.start_time).total_seconds()
    fresh_cached_tasks = sorted(
        t.name for t in trs if t.state.name != "Cached" and t.name.split("[")[0].split("-")[0] in CACHED_TASKS
    )
    return flow_total, task_total, states, fresh_cached_tasks


CACHED_TASKS = {"ingest", "build", "train", "evaluate"}  # task run names: ingest[..], build-snapshot[..], train-sft[..]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", type=Path, default=None, help="A PipelineConfig YAML (default: the sample run).")
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args()
    home = Path(tempfile.mkdtemp(prefix="dojoflow-orch-"))
    os.environ["HF_HUB_OFFLINE"] = "1"
    from flows.runtime.environment import prepare_prefect_env

    prepare_prefect_env(home)
    os.environ["PREFECT_LOGGING_LEVEL"] = "WARNING"
    from prefect import flow

    from benchmarks.machine import describe_machine
    from flows.curriculum import curriculum
    from storage.atomic import write_json
    from tasks.config import PipelineConfig

    @flow(name="warm-up")
    def warm_up() -> int:
        return 1

    cfg = PipelineConfig.from_yaml(a.config) if a.config else PipelineConfig()
    cfg = cfg.model_copy(update={"home": str(home)})
    runs = []
    try:
        t0 = time.perf_counter()
        warm_up()
        server_start_s = time.perf_counter() - t0
        for label in ("first", "cached"):
            t0 = time.perf_counter()
            state = curriculum(config=cfg, return_state=True)
            wall = time.perf_counter() - t0
            assert state.is_completed(), state
            flow_s, task_s, states, fresh_cached_tasks = _task_seconds(state.state_details.flow_run_id)
            if label == "cached" and fresh_cached_tasks:
                raise SystemExit(f"the rerun executed cached tasks instead of reusing them: {fresh_cached_tasks}")
            runs.append(
                {
                    "run": label,
                    "wall_s": wall,
                    "flow_run_s": flow_s,
                    "task_runs_s": task_s,
                    "prefect_s": wall - task_s,
                    "prefect_share": (wall - task_s) / wall,
                    "task_states": states,
                }
            )
    finally:
        shutil.rmtree(home, ignore_errors=True)
    machine = describe_machine(("prefect", "torch", "transformers", "trl"))
    print(
        f"sample curriculum ({len(cfg.sources)} sources, trainers {list(cfg.trainers.enabled())}); "
        f"{machine['cpu_model']}, {machine['nproc']} CPUs; embedded server start (not in the runs): {server_start_s:.1f} s"
    )
    print(
        f"{'run':<7} {'wall s':>8} {'flow run s':>10} {'in tasks s':>10} {'Prefect s':>9} {'Prefect %':>9}  task states"
    )
    for r in runs:
        print(
            f"{r['run']:<7} {r['wall_s']:>8.1f} {r['flow_run_s']:>10.1f} {r['task_runs_s']:>10.1f} "
            f"{r['prefect_s']:>9.1f} {100 * r['prefect_share']:>8.0f}%  {r['task_states']}"
        )
    ratio = runs[1]["wall_s"] / runs[0]["wall_s"]
    print(f"cached rerun / first run = {ratio:.3f} (target < 0.2)")
    if a.out:
        write_json(a.out, {"runs": runs, "ratio": ratio, "server_start_s": server_start_s, "machine": machine})


if __name__ == "__main__":
    main()
