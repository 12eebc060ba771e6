"""Cancelling a deployment's flow run as the UI's Cancel button does (issue 25): a real
`prefect server`, the process work pool, `prefect deploy --all` and a worker, as in
tests/e2e/test_deployment.py; a run of a one-step curriculum whose SFT trains in a torchrun child
(tests/e2e/test_training_logs_in_ui.py's config, far more steps than the test waits for). Once a
training process exists, the flow run's state is set to CANCELLING through the API (what the
button sends: POST /flow_runs/{id}/set_state); the worker stops the flow-run process, whose
supervisor (tasks/trainers/supervise.py) stops the training job's process group. Once the run is
Cancelled no process of the training job (torchrun or its workers) may remain.

Two defences stop the job: the supervisor's group stop (tasks/process_group.stop_group: SIGTERM to
torchrun, which stops its workers) and the parent-death signals (torchrun gets SIGKILL when the
flow-run process dies, each worker when torchrun dies). Either alone passes this test; with both
disabled torchrun and its worker outlive the Cancelled run and the test fails.
"""

from __future__ import annotations

import json
import os
import re
import signal
from pathlib import Path

import httpx
import pytest
import yaml

from tests.e2e.test_deployment import (
    EVENT_CEILING_S,
    PREFECT,
    ROOT,
    Processes,
    child_env,
    run_cli,
    wait_for,
)
from tests.e2e.test_training_logs_in_ui import CONFIG, job_processes
from tests.ports import free_port
from tests.prefect_db import copy_db


def torchrun_processes(home) -> dict[int, str]:
    """Live torchrun launchers of a training job under `home` (their command lines name the job file)."""
    found = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if "torch.distributed.run" in cmd or "torchrun" in cmd:
            if str(home) in cmd and state != "Z":
                found[int(proc.name)] = cmd
    return found


@pytest.mark.e2e
def test_cancelling_a_flow_run_from_the_ui_stops_its_training_processes(tmp_path, migrated_prefect_db):
    from tasks.config import PipelineConfig

    port = free_port()
    api = f"http://127.0.0.1:{port}/api"
    home = tmp_path / "dojoflow-home"
    env = child_env(tmp_path, api)
    procs = Processes(tmp_path)
    copy_db(migrated_prefect_db, tmp_path / "prefect-home" / "prefect.db")

    def get(path: str):
        try:
            r = httpx.get(f"{api}{path}", timeout=10)
        except httpx.HTTPError:
            return None
        return r.json() if r.status_code == 200 else None

    try:
        server = procs.start(
            "server",
            [PREFECT, "server", "start", "--host", "127.0.0.1", "--port", str(port)],
            {**env, "PREFECT_SERVER_SERVICES_SCHEDULER_ENABLED": "false"},
        )
        wait_for("server health", lambda: get("/health") is True, EVENT_CEILING_S, alive=server)
        pool = str(ROOT / "deployments" / "process-pool.json")
        run_cli(["work-pool", "create", "dojoflow", "--type", "process", "--base-job-template", pool], env)
        run_cli(["--no-prompt", "deploy", "--all"], {**env, "DOJOFLOW_PROJECT_DIR": str(ROOT)}, timeout=240)
        worker = procs.start(
            "worker",
            [PREFECT, "worker", "start", "--pool", "dojoflow", "--type", "process"],
            {**env, "PREFECT_WORKER_QUERY_SECONDS": "1"},
        )
        cfg = PipelineConfig.model_validate(yaml.safe_load(CONFIG)).model_dump(mode="json")
        out = run_cli(
            [
                "deployment",
                "run",
                "curriculum/sample",
                "--params",
                json.dumps({"config": cfg}),
                "--job-variable",
                f"dojoflow_home={json.dumps(str(home))}",
            ],
            env,
        )
        run_id = re.search(r"UUID: ([0-9a-f-]{36})", out).group(1)

        def told() -> str:
            return procs.tail("worker", 8000)

        # The event: a training process of this home exists (the step launched its torchrun child).
        training = wait_for("a training process", lambda: job_processes(home), EVENT_CEILING_S, 0.5, worker, told)
        assert get(f"/flow_runs/{run_id}")["state_type"] == "RUNNING"

        # The UI's Cancel button: the flow run's state set to CANCELLING through the API.
        body = {"state": {"type": "CANCELLING", "name": "Cancelling"}}
        answer = httpx.post(f"{api}/flow_runs/{run_id}/set_state", json=body, timeout=30).raise_for_status().json()
        assert answer["status"] == "ACCEPT", answer

        def cancelled():
            run = get(f"/flow_runs/{run_id}")
            return run if run and run["state_type"] not in {"RUNNING", "CANCELLING"} else None

        run = wait_for("the flow run to leave Cancelling", cancelled, EVENT_CEILING_S, 0.5, worker, told)
        assert run["state_type"] == "CANCELLED", f"the run ended {run['state_name']}:\n{told()}"
        assert not set(training) & set(job_processes(home)), f"training outlived the cancellation:\n{training}"
        assert not job_processes(home), f"training processes outlived the cancellation: {job_processes(home)}"
        assert not torchrun_processes(home), f"torchrun outlived the cancellation: {torchrun_processes(home)}"
    finally:
        procs.stop("worker")
        procs.stop("server", grace=20)
        for pid in {**job_processes(home), **torchrun_processes(home)}:  # orphans of a failed check
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
