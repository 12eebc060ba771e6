"""`prefect deploy` of the nightly warns when the machine has no Lean toolchain (the nightly
traces repositories), instead of the first night failing at run time, and creates its
schedule paused (issue 26 B: it scheduled three nightly runs after only a warning)."""

from __future__ import annotations

import os
from pathlib import Path

import yaml

from flows.runtime.deploy_checks import warn_if_no_lean_toolchain

ROOT = Path(__file__).resolve().parents[2]


def test_the_nightly_deployment_runs_the_check_at_deploy_time():
    doc = yaml.safe_load((ROOT / "prefect.yaml").read_text())
    nightly = next(d for d in doc["deployments"] if d["name"] == "nightly")
    assert nightly["build"] == [{"flows.runtime.deploy_checks.warn_if_no_lean_toolchain": {"id": "lean-check"}}]
    assert nightly["schedules"][0]["active"] == "{{ lean-check.schedule_active }}"


def test_no_toolchain_warns_with_the_fix_and_does_not_fail(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing on it
    assert warn_if_no_lean_toolchain() == {"lean_toolchain": "missing", "schedule_active": False}
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "lake (not on PATH) here" in err and "created paused" in err
    assert "install elan" in err and "dojoflow doctor" in err and "prefect deployment schedule resume" in err


def test_a_toolchain_on_path_is_found_silently(tmp_path, monkeypatch, capsys):
    for name, line in (("elan", "elan 4.1.2"), ("lean", "Lean (version 4.20.0)"), ("lake", "Lake version 5.0.0")):
        (tmp_path / name).write_text(f"#!/bin/sh\necho '{line}'\n")
        (tmp_path / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    assert warn_if_no_lean_toolchain() == {"lean_toolchain": "found", "schedule_active": True}
    assert capsys.readouterr().err == ""


def test_deploying_the_nightly_without_lean_creates_its_schedule_paused_and_says_how_to_resume_it(prefect, tmp_path):
    """`prefect deploy --name nightly` against the session's real temporary server, from a shell
    whose PATH has no Lean: one warning line, the schedule paused, no run scheduled; the
    command the line names resumes it."""
    import json
    import subprocess
    import sys

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import WorkPoolCreate
    from prefect.client.schemas.filters import DeploymentFilter, DeploymentFilterId
    from prefect.exceptions import ObjectAlreadyExists
    from prefect.settings import PREFECT_API_URL

    template = json.loads((ROOT / "deployments" / "process-pool.json").read_text())
    with get_client(sync_client=True) as client:
        try:
            client.create_work_pool(WorkPoolCreate(name="dojoflow", type="process", base_job_template=template))
        except ObjectAlreadyExists:
            pass
    binary = Path(sys.executable).parent
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "DOJOFLOW_"))}
    env.update(
        PATH=f"{binary}{os.pathsep}{os.defpath}",  # no elan, lean or lake
        PREFECT_API_URL=PREFECT_API_URL.value(),
        PREFECT_HOME=str(tmp_path / "prefect-home"),
        DOJOFLOW_PROJECT_DIR=str(ROOT),
        HF_HUB_OFFLINE="1",
    )

    def cli(*args: str) -> str:
        done = subprocess.run(
            [str(binary / "prefect"), *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout + done.stderr

    out = cli("--no-prompt", "deploy", "--name", "nightly")
    warnings = [line for line in out.splitlines() if "warning: nightly" in line]
    assert len(warnings) == 1 and "created paused" in warnings[0], out
    assert "prefect deployment schedule resume nightly/nightly" in warnings[0]
    with get_client(sync_client=True) as client:
        deployment = client.read_deployment_by_name("nightly/nightly")
        [schedule] = deployment.schedules
        assert schedule.active is False and schedule.schedule.cron == "0 2 * * *"
        runs = client.read_flow_runs(deployment_filter=DeploymentFilter(id=DeploymentFilterId(any_=[deployment.id])))
        assert runs == []  # nothing scheduled that cannot run here

    cli("deployment", "schedule", "resume", "nightly/nightly", str(schedule.id))
    with get_client(sync_client=True) as client:
        assert client.read_deployment_by_name("nightly/nightly").schedules[0].active is True
