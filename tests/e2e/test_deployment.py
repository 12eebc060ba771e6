"""prefect.yaml as an operator uses it: a real `prefect server` on 127.0.0.1, the process work
pool from deployments/process-pool.json, `prefect --no-prompt deploy --all`, a worker, and
`prefect deployment run 'curriculum/sample'` on examples/tiny.yaml, checked through the
store's catalog and the Prefect API; then, on the same server and worker (the module fixture
`deployed`), a run cancelled as the UI's Cancel button does, whose training processes must all
stop (issue 25). Also (fast, not e2e): the deployment files agree with the example configs.

    .venv/bin/python -m pytest tests/e2e -m e2e -s      # -s prints the phase timings

Every process it starts runs in its own process group and is stopped in a `finally`
(SIGINT first, which stops a worker cleanly; then SIGTERM, then SIGKILL).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import yaml

from tests.ports import free_port
from tests.prefect_db import copy_db

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
PREFECT = str(BIN / "prefect")
TERMINAL = {"COMPLETED", "FAILED", "CRASHED", "CANCELLED"}
EVENT_CEILING_S = 1800  # waits are for events (health, a run's end); only a hung process reaches this


def load_prefect_yaml() -> dict:
    return yaml.safe_load((ROOT / "prefect.yaml").read_text())


def deployment(name: str) -> dict:
    return next(d for d in load_prefect_yaml()["deployments"] if d["name"] == name)


# -- fast checks of the files (no server) --------------------------------------------------
def test_both_deployments_use_the_one_work_pool_and_an_absolute_project_dir():
    doc = load_prefect_yaml()
    pools = {d["name"]: d["work_pool"]["name"] for d in doc["deployments"]}
    assert pools == {"sample": "dojoflow", "nightly": "dojoflow", "sorry": "dojoflow"}
    assert deployment("sorry")["entrypoint"] == "flows/prove.py:prove" and "schedules" not in deployment("sorry")
    assert doc["pull"] == [
        {"prefect.deployments.steps.set_working_directory": {"directory": "{{ $DOJOFLOW_PROJECT_DIR }}"}}
    ]
    assert deployment("nightly")["schedules"] == [
        {"cron": "0 2 * * *", "timezone": "UTC", "active": "{{ lean-check.schedule_active }}"}
    ]  # paused where the deploying machine has no Lean (flows/runtime/deploy_checks.py)
    assert "schedules" not in deployment("sample") and deployment("sample")["parameters"] == {}


def test_the_nightly_deployment_parameters_are_examples_nightly_yaml():
    from tasks.watch import NightlyConfig

    deployed = NightlyConfig.model_validate(deployment("nightly")["parameters"]["config"])
    assert deployed == NightlyConfig.from_yaml(ROOT / "examples" / "nightly.yaml")


def test_examples_sample_yaml_is_the_default_run_and_tiny_yaml_is_one_small_step():
    from tasks.config import PipelineConfig
    from tasks.sft.config import SFTSettings

    sample, default = PipelineConfig.from_yaml(ROOT / "examples" / "sample.yaml"), PipelineConfig()
    a, b = sample.model_dump(), default.model_dump()
    sft_a, sft_b = a["trainers"].pop("sft"), b["trainers"].pop("sft")
    assert a == b
    assert SFTSettings.model_validate(sft_a) == SFTSettings.model_validate(sft_b)

    tiny = PipelineConfig.from_yaml(ROOT / "examples" / "tiny.yaml")
    assert len(tiny.sources) == 1 and Path(tiny.sources[0].export_path).is_dir() and tiny.max_steps == 1
    assert SFTSettings.model_validate(tiny.trainers.sft).training["max_steps"] <= 3


def test_the_work_pool_template_sets_the_environment_and_a_home_variable():
    template = json.loads((ROOT / "deployments" / "process-pool.json").read_text())
    env = template["job_configuration"]["env"]
    assert env["HF_HUB_OFFLINE"] == "1" and env["PREFECT_SERVER_ANALYTICS_ENABLED"] == "false"
    assert env["DOJOFLOW_HOME"] == "{{ dojoflow_home }}"
    assert {"dojoflow_home", "project_dir", "env", "command"} <= set(template["variables"]["properties"])


# -- the end-to-end run ---------------------------------------------------------------------
class Processes:
    """Child processes, each in its own process group, with its output in a log file."""

    def __init__(self, logs: Path):
        self.logs = logs
        self.procs: dict[str, subprocess.Popen] = {}

    def start(self, name: str, args: list[str], env: dict) -> subprocess.Popen:
        with open(self.logs / f"{name}.log", "wb") as log:  # the child keeps its own descriptor
            p = subprocess.Popen(
                args,
                cwd=ROOT,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        self.procs[name] = p
        return p

    def tail(self, name: str, chars: int = 4000) -> str:
        path = self.logs / f"{name}.log"
        return path.read_text(errors="replace")[-chars:] if path.exists() else ""

    def stop(self, name: str, grace: float = 30.0) -> None:
        p = self.procs.get(name)
        if p is None:
            return
        for sig, wait in ((signal.SIGINT, grace), (signal.SIGTERM, min(grace, 10.0)), (signal.SIGKILL, 10.0)):
            if p.poll() is not None:
                break
            try:
                os.killpg(p.pid, sig)  # the whole group: the worker's flow-run children too
            except ProcessLookupError:
                break
            try:
                p.wait(timeout=wait)
            except subprocess.TimeoutExpired:
                continue
        try:  # children that outlived their parent
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def run_cli(args: list[str], env: dict, timeout: float = 180) -> str:
    res = subprocess.run(
        [PREFECT, *args],
        check=False,
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
    hint = ""
    if "422 Unprocessable Entity" in res.stdout + res.stderr:
        hint = (
            "\nfastapi 0.151 and later reject the null fields Prefect 3.8.8's client sends "
            "(offset, limit, filters): install fastapi<0.151."
        )
    assert res.returncode == 0, (
        f"`prefect {' '.join(args)}` failed ({res.returncode}):{hint}\n{res.stdout}\n{res.stderr}"
    )
    return res.stdout


def child_env(tmp: Path, api_url: str) -> dict:
    """The operator's shell: this interpreter's PATH, no Prefect or Dojoflow settings of the caller."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "DOJOFLOW_"))}
    env.update(
        PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', os.defpath)}",
        PREFECT_HOME=str(tmp / "prefect-home"),
        PREFECT_API_URL=api_url,
        PREFECT_SERVER_ANALYTICS_ENABLED="false",
        PREFECT_LOGGING_LEVEL="INFO",
        HF_HUB_OFFLINE="1",
        TOKENIZERS_PARALLELISM="false",
        PYTHONUNBUFFERED="1",
    )
    return env


def read_artifacts(api: str, flow_run_id: str) -> dict[str, dict]:
    """The flow run's artifacts by key (plain REST: Prefect 3.8.8's client sends null filters,
    which newer fastapi releases reject, and an empty task-run filter drops flow-level artifacts)."""
    found = (
        httpx.post(f"{api}/artifacts/filter", json={"artifacts": {"flow_run_id": {"any_": [flow_run_id]}}}, timeout=10)
        .raise_for_status()
        .json()
    )
    return {a["key"] or a["id"]: a for a in found}


def quiet_repository(tmp: Path) -> tuple[str, Path]:
    """A bare git repository (as a file:// URL) whose HEAD the nightly state already records."""
    from tasks.watch import WatchedRepo, latest_commit, record_processed

    env = {"PATH": os.environ["PATH"], "HOME": str(tmp), "GIT_CONFIG_NOSYSTEM": "1"}
    work, bare = tmp / "watched", tmp / "watched.git"
    git = ["git", "-c", "user.name=T", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q", "-b", "main", str(work)], check=True, env=env)
    subprocess.run([*git, "-C", str(work), "commit", "-q", "--allow-empty", "-m", "one"], check=True, env=env)
    subprocess.run([*git, "clone", "-q", "--bare", str(work), str(bare)], check=True, env=env)
    repo = WatchedRepo(url_or_path=bare.as_uri(), branch="main")
    home = tmp / "nightly-home"
    record_processed(home, [(repo, latest_commit(repo))])
    return repo.url_or_path, home


def wait_for(
    what: str, check, timeout: float, every: float = 0.2, alive: subprocess.Popen | None = None, log=lambda: ""
):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        if alive is not None and alive.poll() is not None:
            pytest.fail(f"{what}: the process exited ({alive.returncode}) while waiting.\n{log()}")
        time.sleep(every)
    pytest.fail(f"{what}: not within {timeout:.0f} s.\n{log()}")


class Deployed:
    """One real `prefect server` (scheduler off), the `dojoflow` process pool from the shipped
    template, `prefect deploy --all` and a process worker, shared by this module's e2e tests
    (the curriculum run, the cancelled run): each run has a Dojoflow home of its own."""

    def __init__(self, tmp: Path, api: str):
        self.api, self.env, self.procs = api, child_env(tmp, api), Processes(tmp)
        self.timings: dict[str, float] = {}
        self.t0 = time.monotonic()
        self.worker: subprocess.Popen | None = None

    def lap(self, name: str) -> None:
        self.timings[name] = round(time.monotonic() - self.t0 - sum(self.timings.values()), 1)

    def get(self, path: str):
        try:
            r = httpx.get(f"{self.api}{path}", timeout=10)
        except httpx.HTTPError:
            return None
        return r.json() if r.status_code == 200 else None

    def run(self, deployment: str, params: dict, *job_variables: str) -> str:
        """`prefect deployment run` as the operator types it; the flow run's id."""
        args = ["deployment", "run", deployment, "--params", json.dumps(params)]
        for variable in job_variables:
            args += ["--job-variable", variable]
        return re.search(r"UUID: ([0-9a-f-]{36})", run_cli(args, self.env)).group(1)

    def told(self) -> str:
        return self.procs.tail("worker", 8000)


@pytest.fixture(scope="module")
def deployed(tmp_path_factory, migrated_prefect_db):
    tmp = tmp_path_factory.mktemp("deployed")
    port = free_port()
    d = Deployed(tmp, f"http://127.0.0.1:{port}/api")
    copy_db(migrated_prefect_db, tmp / "prefect-home" / "prefect.db")  # spares the server its migrations
    try:
        # A server; its scheduler is off so that the nightly cron creates no run during the tests
        # (whether it would is checked from the deployment's schedule).
        server = d.procs.start(
            "server",
            [PREFECT, "server", "start", "--host", "127.0.0.1", "--port", str(port)],
            {**d.env, "PREFECT_SERVER_SERVICES_SCHEDULER_ENABLED": "false"},
        )
        wait_for("server health", lambda: d.get("/health") is True, EVENT_CEILING_S, alive=server,
                 log=lambda: d.procs.tail("server"))  # fmt: skip
        d.lap("server start")
        # The work pool from the shipped template, and every deployment of prefect.yaml
        pool = str(ROOT / "deployments" / "process-pool.json")
        run_cli(["work-pool", "create", "dojoflow", "--type", "process", "--base-job-template", pool], d.env)
        run_cli(["--no-prompt", "deploy", "--all"], {**d.env, "DOJOFLOW_PROJECT_DIR": str(ROOT)}, timeout=240)
        d.lap("work pool + deploy --all")
        # A worker with neither DOJOFLOW_PROJECT_DIR (the deployment carries it) nor DOJOFLOW_HOME
        # (the pool template's `dojoflow_home` variable, set for each run, provides it).
        d.worker = d.procs.start(
            "worker",
            [PREFECT, "worker", "start", "--pool", "dojoflow", "--type", "process"],
            {**d.env, "PREFECT_WORKER_QUERY_SECONDS": "1"},
        )
        yield d
    finally:
        # The worker's own shutdown is not under test: after the cancelled run it outlived SIGINT's
        # 30 s and SIGTERM's 10 s (its log: both forwarded to the inner worker, which never stopped)
        # until SIGKILL, ~33 s of teardown; a short grace (1 s: 3 s took 6.6 s of teardown), then SIGTERM,
        # then the group's SIGKILL.
        d.procs.stop("worker", grace=1.0)
        d.lap("stop worker")
        d.procs.stop("server", grace=20)
        print("\ne2e timings (s):", json.dumps(d.timings), f"total {time.monotonic() - d.t0:.1f}")
    assert all(p.poll() is not None for p in d.procs.procs.values())


@pytest.mark.e2e
def test_deploy_and_run_the_curriculum_on_a_real_server_and_process_worker(tmp_path, deployed):
    from storage import catalog
    from storage.store import Store
    from tasks.config import PipelineConfig

    d, home = deployed, tmp_path / "dojoflow-home"
    sample, nightly = d.get("/deployments/name/curriculum/sample"), d.get("/deployments/name/nightly/nightly")
    assert sample and nightly, "prefect deploy --all did not create curriculum/sample and nightly/nightly"
    assert sample["work_pool_name"] == nightly["work_pool_name"] == "dojoflow"
    # DOJOFLOW_PROJECT_DIR, set at deploy time, is stored in the pull step (unset, the
    # placeholder would be stored and resolved on the worker when a run starts).
    assert sample["pull_steps"] == [{"prefect.deployments.steps.set_working_directory": {"directory": str(ROOT)}}]
    [schedule] = nightly["schedules"]
    assert schedule["schedule"]["cron"] == "0 2 * * *" and schedule["schedule"]["timezone"] == "UTC"
    from flows.runtime.deploy_checks import warn_if_no_lean_toolchain

    lean_here = warn_if_no_lean_toolchain()["schedule_active"]  # this shell's PATH is the deploy's
    assert schedule["active"] is lean_here and nightly["parameters"]["config"]["watch"][0]["branch"] == "main"
    assert not sample["schedules"]

    # The curriculum on examples/tiny.yaml (the whole PipelineConfig as the `config` parameter)
    cfg = PipelineConfig.from_yaml(ROOT / "examples" / "tiny.yaml").model_dump(mode="json")
    run_id = d.run("curriculum/sample", {"config": cfg}, f"dojoflow_home={json.dumps(str(home))}")
    # The nightly deployment, watching a local repository whose commit was already processed
    watched, night_home = quiet_repository(tmp_path)
    night_cfg = {
        "watch": [{"url_or_path": watched, "branch": "main"}],
        "home": str(night_home),
        "pipeline": {"name": "nightly", "sources": [], "trainers": {"sft": None}},
    }
    night_id = d.run("nightly/nightly", {"config": night_cfg})
    d.lap("deployment run x2 (CLI)")

    def finished(flow_run_id):
        run = d.get(f"/flow_runs/{flow_run_id}")
        return run if run and run["state_type"] in TERMINAL else None

    night = wait_for("the nightly run to finish", lambda: finished(night_id), EVENT_CEILING_S, 0.5, d.worker, d.told)
    run = wait_for("the curriculum run to finish", lambda: finished(run_id), EVENT_CEILING_S, 0.5, d.worker, d.told)
    d.lap("flow runs (worker poll + nightly + curriculum)")
    assert run["state_type"] == "COMPLETED", f"curriculum ended {run['state_name']}:\n{d.told()}"
    assert night["state_type"] == "COMPLETED", f"nightly ended {night['state_name']}:\n{d.told()}"
    night_arts = read_artifacts(d.api, night_id)
    assert "nothing changed" in night_arts["nightly-report"]["data"]

    # Metrics landed in the catalog of the home the pool template passed to the run
    store = Store.open(home, create=False)
    rows = catalog.query(store, "SELECT trainer, split, metric, value FROM metrics").to_pylist()
    assert rows and {r["trainer"] for r in rows} == {"sft"} and {r["split"] for r in rows} == {"test"}
    assert {"top1_accuracy", "completion_loss"} <= {r["metric"] for r in rows}
    runs = catalog.query(store, "SELECT run_id, status FROM runs").to_pylist()
    assert runs == [{"run_id": run_id, "status": "completed"}]

    # ... and the run has its artifacts (report, metrics table, progress) in the API.
    arts = read_artifacts(d.api, run_id)
    assert {"tiny-report", "tiny-metrics"} <= set(arts)
    assert any(a["type"] == "progress" for a in arts.values())
    assert "NatBasics" in arts["tiny-report"]["data"]


# -- cancelling a deployment's flow run from the UI (issue 25) ------------------------------------
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
def test_cancelling_a_flow_run_from_the_ui_stops_its_training_processes(tmp_path, deployed):
    """Cancelling a deployment's flow run as the UI's Cancel button does: a run of a one-step
    curriculum whose SFT trains in a torchrun child (tests/e2e/test_report_in_ui.py's config,
    far more steps than the test waits for). Once a training process exists, the flow run's state is
    set to CANCELLING through the API (what the button sends: POST /flow_runs/{id}/set_state); the
    worker stops the flow-run process, whose supervisor (tasks/trainers/supervise.py) stops the
    training job's process group. Once the run is Cancelled no process of the training job (torchrun
    or its workers) may remain.

    Two defences stop the job: the supervisor's group stop (tasks/process_group.stop_group: SIGTERM
    to torchrun, which stops its workers) and the parent-death signals (torchrun gets SIGKILL when the
    flow-run process dies, each worker when torchrun dies). Either alone passes this test; with both
    disabled torchrun and its worker outlive the Cancelled run and the test fails."""
    from tasks.config import PipelineConfig
    from tests.e2e.test_report_in_ui import CONFIG, job_processes

    d, home = deployed, tmp_path / "dojoflow-home"
    try:
        cfg = PipelineConfig.model_validate(yaml.safe_load(CONFIG)).model_dump(mode="json")
        run_id = d.run("curriculum/sample", {"config": cfg}, f"dojoflow_home={json.dumps(str(home))}")
        # The event: a training process of this home exists (the step launched its torchrun child).
        training = wait_for("a training process", lambda: job_processes(home), EVENT_CEILING_S, 0.5, d.worker, d.told)
        assert d.get(f"/flow_runs/{run_id}")["state_type"] == "RUNNING"

        # The UI's Cancel button: the flow run's state set to CANCELLING through the API.
        body = {"state": {"type": "CANCELLING", "name": "Cancelling"}}
        answer = httpx.post(f"{d.api}/flow_runs/{run_id}/set_state", json=body, timeout=30).raise_for_status().json()
        assert answer["status"] == "ACCEPT", answer

        def cancelled():
            run = d.get(f"/flow_runs/{run_id}")
            return run if run and run["state_type"] not in {"RUNNING", "CANCELLING"} else None

        run = wait_for("the flow run to leave Cancelling", cancelled, EVENT_CEILING_S, 0.5, d.worker, d.told)
        assert run["state_type"] == "CANCELLED", f"the run ended {run['state_name']}:\n{d.told()}"
        assert not set(training) & set(job_processes(home)), f"training outlived the cancellation:\n{training}"
        assert not job_processes(home), f"training processes outlived the cancellation: {job_processes(home)}"
        assert not torchrun_processes(home), f"torchrun outlived the cancellation: {torchrun_processes(home)}"
    finally:
        for pid in {**job_processes(home), **torchrun_processes(home)}:  # orphans of a failed check
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
