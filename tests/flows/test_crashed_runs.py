"""A run whose process was SIGKILLed is marked crashed, in the catalog and in Prefect,
when `dojoflow runs` is asked or the next run starts."""

import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from storage import runs as run_records
from storage.store import Store

from .cli_store import invoke

ROOT = Path(__file__).resolve().parents[2]


def _wait_for(condition, what: str, proc=None, ceiling: float = 600.0):
    """Poll an event (not a duration): the ceiling only stops a hung test."""
    deadline = time.monotonic() + ceiling
    while not condition():
        assert proc is None or proc.poll() is None, f"the process exited ({proc.returncode}) before {what}"
        assert time.monotonic() < deadline, f"no {what} after {ceiling} s"
        time.sleep(0.2)


def _start_stuck_run(home: Path) -> subprocess.Popen:
    from prefect.settings import PREFECT_API_URL

    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "PREFECT_API_URL": PREFECT_API_URL.value(),
        "PREFECT_LOGGING_LEVEL": "WARNING",
    }
    return subprocess.Popen(
        [sys.executable, "-m", "tests.flows.stuck_run", str(home)],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def test_a_killed_run_is_marked_crashed_in_the_catalog_and_in_prefect(prefect, tmp_path, monkeypatch):
    from prefect.client.orchestration import get_client

    monkeypatch.setenv("DOJOFLOW_HOME", str(tmp_path / "elsewhere"))  # restored after: the CLI sets defaults
    home = tmp_path / "home"
    Store.open(home)
    proc = _start_stuck_run(home)
    try:
        _wait_for(lambda: run_records.all_runs(Store.open(home, create=False)), "run row", proc)
        [row] = run_records.all_runs(Store.open(home, create=False))
        assert row["status"] == "running"
        r = invoke("runs", "--home", home)
        assert r.exit_code == 0 and ",running," in r.output  # alive: left alone
    finally:
        killed_at = datetime.now(UTC)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()

    time.sleep(1.0)  # found a while after the kill: the run's duration must not include that wait
    r = invoke("runs", "--home", home)
    assert r.exit_code == 0, r.output
    assert f"{row['run_id']},stuck,stuck,crashed," in r.output
    [ended] = run_records.all_runs(Store.open(home, create=False))
    assert ended["started_at"] <= ended["finished_at"] <= killed_at  # its last sign of life, not the detection
    with get_client(sync_client=True) as client:
        assert client.read_flow_run(row["run_id"]).state.type.value == "CRASHED"
        from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

        task_runs = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[row["run_id"]])))
        assert [t.state.type.value for t in task_runs] == ["CRASHED"]


def test_a_run_of_another_host_or_without_a_pid_is_not_guessed_at(tmp_path):
    home = tmp_path / "home"
    store = Store.open(home)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # its pid is now free: a process that is gone
    run_records.record_start(store, "gone", "curriculum", {"name": "a"}, pid=dead.pid)
    run_records.record_start(store, "alive", "curriculum", {"name": "b"})  # this test's own process
    run_records.record_start(store, "other-host", "curriculum", {"name": "c"}, pid=dead.pid)
    from storage import catalog

    with catalog.connect(store, write=True) as con:
        con.execute("UPDATE runs SET host = 'elsewhere.invalid' WHERE run_id = 'other-host'")
        con.execute("INSERT INTO runs (run_id, flow, status) VALUES ('old', 'curriculum', 'running')")
    r = invoke("runs", "--home", home)
    assert r.exit_code == 0, r.output
    status = {row["run_id"]: row["status"] for row in run_records.all_runs(store)}
    assert status == {"gone": "crashed", "alive": "running", "other-host": "running", "old": "running"}


def test_a_killed_process_not_yet_reaped_counts_as_gone(tmp_path):
    store = Store.open(tmp_path / "home")
    zombie = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        run_records.record_start(store, "zombie", "curriculum", {"name": "a"}, pid=zombie.pid)
        assert run_records.crashed_runs(store) == []
        os.kill(zombie.pid, signal.SIGKILL)  # not waited for: a zombie until reaped
        _wait_for(lambda: run_records.crashed_runs(store) == ["zombie"], "zombie detected", ceiling=120)
    finally:
        zombie.kill()
        zombie.wait()


def test_a_pid_reused_by_a_later_process_is_not_taken_for_the_run(tmp_path):
    home = tmp_path / "home"
    store = Store.open(home)
    later = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        run_records.record_start(store, "reused", "curriculum", {"name": "a"}, pid=later.pid)
        from storage import catalog

        with catalog.connect(store, write=True) as con:  # the run started before `later` did
            con.execute("UPDATE runs SET started_at = started_at - INTERVAL 1 HOUR")
        assert run_records.crashed_runs(store) == ["reused"]
        with catalog.connect(store, write=True) as con:
            con.execute("UPDATE runs SET started_at = started_at + INTERVAL 2 HOUR")
        assert run_records.crashed_runs(store) == []  # the same live process, started before the run
    finally:
        later.kill()
        later.wait()


def test_a_new_run_marks_the_runs_killed_before_it_crashed(prefect, tmp_path):
    import pytest

    from flows.curriculum import curriculum
    from storage.errors import InputError
    from tasks.config import SourceConfig

    from .fixtures import config

    home = tmp_path / "home"
    store = Store.open(home)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    run_records.record_start(store, "killed-earlier", "curriculum", {"name": "a"}, pid=dead.pid)
    missing = SourceConfig(repo=str(tmp_path / "no-such-repo"), name="missing")
    with pytest.raises(InputError):  # fails at its first source, after the run has started
        curriculum(config=config(tmp_path, home, n=1).model_copy(update={"sources": [missing]}))
    status = {row["run_id"]: row["status"] for row in run_records.all_runs(store)}
    assert status.pop("killed-earlier") == "crashed" and list(status.values()) == ["failed"]


def test_a_deployment_run_whose_process_was_killed_is_crashed_with_its_task_runs(prefect, tmp_path):
    """A worker's flow-run process SIGKILLed (out of memory): Prefect's Runner proposes Crashed
    for the flow run and calls the flow's on_crashed hooks with that state (prefect 3.8.8,
    prefect/runner/runner.py `_run_on_crashed_hooks`); its task run stayed Running for good
    and the catalog said `failed`. Here the same calls on a real flow run and task run."""
    from prefect import task
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId
    from prefect.states import Crashed, Running

    from flows.curriculum import curriculum

    @task(name="train")
    def train() -> None: ...

    home = tmp_path / "home"
    store = Store.open(home)
    with get_client(sync_client=True) as client:
        flow_run = client.create_flow_run(curriculum, parameters={"config": {"home": str(home)}}, state=Running())
        task_run = client.create_task_run(train, flow_run.id, dynamic_key="0", state=Running())
        run_records.record_start(store, str(flow_run.id), "curriculum", {"name": "deployed"})
        client.set_flow_run_state(
            flow_run.id, Crashed(message="Flow run process exited with non-zero status code -9."), force=True
        )
        flow_run = client.read_flow_run(flow_run.id)
        for hook in curriculum.on_crashed_hooks:
            hook(curriculum, flow_run, flow_run.state)
        [row] = run_records.all_runs(Store.open(home, create=False))
        assert row["status"] == "crashed"
        assert row["finished_at"] == flow_run.state.timestamp
        in_run = FlowRunFilter(id=FlowRunFilterId(any_=[flow_run.id]))
        assert [t.state.type.value for t in client.read_task_runs(flow_run_filter=in_run)] == ["CRASHED"]
        assert client.read_task_run(task_run.id).state.type.value == "CRASHED"
