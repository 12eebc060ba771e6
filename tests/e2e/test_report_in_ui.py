"""Dojoflow's runs as a user sees them in the Prefect UI, rendered by a real headless Chromium,
against one `dojoflow server start` (a real Prefect server with its UI, on a free port, its home
seeded with `migrated_prefect_db`) shared by this module's tests (`ui_server`), stopped after
them, after which `dojoflow server status` must say none runs:

- the run report: `dojoflow run examples/tiny.yaml` against it, and the report artifact opened
  in the browser, which must load the plot (naturalWidth > 0);
- a launched trainer's log lines while it trains (issue 25), see
  `test_a_launched_trainers_log_lines_show_in_the_ui_while_it_trains`.

Needs Debian's `chromium` (`.ci/run` installs it); skipped with that reason without it.
The screenshots are kept as `report-in-ui.png` and `training-logs-in-ui.png` in each test's tmp folder.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import httpx
import pytest

from tasks.report import PLOT_ALT
from tests.e2e.test_deployment import wait_for
from tests.ports import free_port
from tests.prefect_db import seed_prefect_home

from .browser import Browser, chromium_binary

ROOT = Path(__file__).resolve().parents[2]


def dojoflow(*args: str, check: bool = True, timeout: float = 900) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "DOJOFLOW_"))}
    env.update(PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1")
    res = subprocess.run(
        [sys.executable, "-m", "flows.cli", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
    assert not check or res.returncode == 0, f"dojoflow {' '.join(args)}: {res.returncode}\n{res.stdout}\n{res.stderr}"
    return res


def artifacts(api: str) -> dict[str, dict]:
    req = urllib.request.Request(f"{api}/artifacts/filter", data=b"{}", headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:  # noqa: S310
        return {a["key"]: a for a in json.load(r) if a["key"]}


@pytest.fixture(scope="module")
def ui_server(tmp_path_factory, migrated_prefect_db) -> tuple[Path, str]:
    """(the Dojoflow home, the server's URL) of this module's `dojoflow server start`, stopped after its tests."""
    if chromium_binary() is None:
        pytest.skip("chromium is not installed (Debian: apt-get install -y chromium; .ci/run does this)")
    home = seed_prefect_home(tmp_path_factory.mktemp("ui-server") / "home", migrated_prefect_db)
    port = free_port()
    started = dojoflow("server", "start", "--home", str(home), "--port", str(port))
    ui = f"http://127.0.0.1:{port}"
    try:
        assert f"started: {ui}" in started.stdout, started.stdout
        yield home, ui
    finally:
        dojoflow("server", "stop", "--home", str(home), check=False)
    assert dojoflow("server", "status", "--home", str(home), check=False).returncode == 1


@pytest.fixture(scope="module")
def browser() -> Browser:
    """One headless Chromium for this module's tests (each opens its own page address in it)."""
    binary = chromium_binary()
    if binary is None:
        pytest.skip("chromium is not installed (Debian: apt-get install -y chromium; .ci/run does this)")
    started = Browser(binary)
    try:
        yield started
    finally:
        started.close()


@pytest.mark.e2e
def test_the_report_plot_renders_in_the_prefect_ui_of_dojoflow_server(tmp_path, ui_server, browser):
    home, ui = ui_server  # this module's `dojoflow server start`, stopped after its tests
    assert dojoflow("server", "status", "--home", str(home)).stdout.startswith(f"Prefect server running: {ui}")
    run = dojoflow("run", str(ROOT / "examples" / "tiny.yaml"), "--home", str(home))
    assert "(started by `dojoflow server start`)" in run.stdout, run.stdout

    found = artifacts(f"{ui}/api")
    report, table = found["tiny-report"], found["tiny-metrics"]
    assert f"![{PLOT_ALT}](data:image/png;base64," in report["data"]
    values = [r["value"] for r in json.loads(table["data"]) if isinstance(r.get("value"), float)]
    assert values and all(v == float(f"{v:.3g}") for v in values), values  # a few significant digits

    browser.open(f"{ui}/artifacts/artifact/{report['id']}")
    loaded = browser.wait_for(
        f"Array.from(document.images).filter(i => i.alt === {PLOT_ALT!r} && i.complete).map(i => i.naturalWidth)"
    )
    browser.screenshot(tmp_path / "report-in-ui.png")
    text = browser.evaluate("document.body.innerText")
    browser.leave()  # read: the page stops polling while the next test runs
    assert loaded and loaded[0] > 0, f"the plot did not load in the UI; page text:\n{text}"
    assert "Repositories in curriculum order" in text


# -- a launched trainer's log lines in the UI while it trains -------------------------------------
# A launched trainer's log lines in the Prefect UI while it trains (issue 25): `dojoflow run` of a
# one-step curriculum, against the module's `dojoflow server start` (`ui_server`), whose SFT
# trains in a torchrun child (`launch.env` is set, so not in-process) for far more steps than the
# test waits for. Once the child has printed a progress line (`step N/M: loss ...`, in torchrun's
# own copy of its output) and the flow run's logs on the server hold one (relayed by
# tasks/trainers/supervise.py), the flow run's page, rendered by a real headless Chromium, must show
# such a line while the flow run and the training task run are still Running. Then SIGTERM stops
# `dojoflow run` (exit 130, the run Cancelled) and no process of the training job is left.

MAX_STEPS = 100_000  # never reached: the test stops the run once it has read the page
PROGRESS = re.compile(rf"step \d+/{MAX_STEPS}: loss \d")  # tasks/trainers/log_progress.progress_line
SHOWN_LINE = PROGRESS.pattern + r"[^\n]*"  # the whole line, as the page's text has it
CEILING_S = 300  # a ceiling for each wait on an event (a loaded 2-core box), not a pace
RELAY_CEILING_S = 120  # from the child's line to the server's logs (sent every LOG_BATCH_S)
LOG_BATCH_S = "0.5"  # PREFECT_LOGGING_TO_API_BATCH_INTERVAL of `dojoflow run` (Prefect's default: 2 s)

CONFIG = f"""\
name: ui-logs
sources:
  - sample: NatBasics
max_steps: 1
trainers:
  sft:
    model: builtin:tiny-causal-lm
    launch:
      env: {{OMP_NUM_THREADS: "1"}}     # anything but the defaults: a torchrun child
    training:
      max_steps: {MAX_STEPS}
      per_device_train_batch_size: 2
      logging_steps: 1
      save_steps: {MAX_STEPS}
  retriever: null
  progress: null
evaluation:
  splits: [test]
"""


def child_output(home: Path) -> str:
    """What the training job's rank 0 printed so far (torchrun's --tee copy, tasks/trainers/launch.py)."""
    return "".join(f.read_text(errors="replace") for f in home.rglob("launch/logs/**/attempt_*/0/stdout.log"))


def progress_logs(api: str) -> list[dict]:
    """The server's latest log records that are this trainer's progress lines."""
    body = {"logs": {"level": {"ge_": 20}}, "sort": "TIMESTAMP_DESC", "limit": 200}
    found = httpx.post(f"{api}/logs/filter", json=body, timeout=30).raise_for_status().json()
    return [log for log in found if PROGRESS.search(log["message"])]


def relayed_steps(api: str, task_run: str) -> list[int]:
    """The steps of the progress lines in the task run's logs on the server, in order."""
    messages, body = [], {"logs": {"task_run_id": {"any_": [task_run]}}, "sort": "TIMESTAMP_ASC", "limit": 200}
    while page := httpx.post(f"{api}/logs/filter", json={**body, "offset": len(messages)}, timeout=30).json():
        messages += [log["message"] for log in page]
    line = re.compile(rf"^step (\d+)/{MAX_STEPS}: loss ")
    return [int(m.group(1)) for m in map(line.match, messages) if m]


def state_of(api: str, kind: str, run_id: str) -> str:
    return httpx.get(f"{api}/{kind}/{run_id}", timeout=30).raise_for_status().json()["state"]["type"]


def job_processes(home: Path) -> dict[int, str]:
    """Live processes (pid: command line) of a training job under `home` (torchrun and its workers)."""
    found = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if "tasks.trainers.worker" in cmd and str(home) in cmd and state != "Z":
            found[int(proc.name)] = cmd
    return found


@pytest.mark.e2e
def test_a_launched_trainers_log_lines_show_in_the_ui_while_it_trains(tmp_path, ui_server, browser):
    home, ui = ui_server
    api = f"{ui}/api"
    config = tmp_path / "ui-logs.yaml"
    config.write_text(CONFIG)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "DOJOFLOW_"))}
    env.update(PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1", PYTHONUNBUFFERED="1")
    env["PREFECT_LOGGING_TO_API_BATCH_INTERVAL"] = LOG_BATCH_S  # the relayed lines reach the server sooner
    out = tmp_path / "run.log"
    with open(out, "wb") as log:
        run = subprocess.Popen(
            [sys.executable, "-m", "flows.cli", "run", str(config), "--home", str(home)],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )

    def told() -> str:
        return f"dojoflow run:\n{out.read_text(errors='replace')[-3000:]}\nchild:\n{child_output(home)[-3000:]}"

    try:
        # The events: the child printed a progress line; then the flow run's logs on the server hold one.
        wait_for("a progress line of the child", lambda: PROGRESS.search(child_output(home)), CEILING_S, 0.5, run, told)
        relayed = wait_for(
            "the child's progress lines in the run's logs on the server (the supervisor's relay)",
            lambda: progress_logs(api),
            RELAY_CEILING_S,
            0.5,
            run,
            told,
        )
        flow_run, task_run = relayed[0]["flow_run_id"], relayed[0]["task_run_id"]
        assert task_run is not None, relayed[0]  # logged inside the training step's task run
        training = job_processes(home)
        assert training, f"no training process is running under {home}\n{told()}"

        browser.open(f"{ui}/runs/flow-run/{flow_run}")
        shown = browser.wait_for(
            f"(document.body.innerText.match(new RegExp({json.dumps(SHOWN_LINE)})) || [])[0]",
            ceiling=CEILING_S,
        )
        text = browser.evaluate("document.body.innerText") or ""
        browser.screenshot(tmp_path / "training-logs-in-ui.png")
        # Read while training: both runs Running, the training processes those seen before.
        assert state_of(api, "flow_runs", flow_run) == "RUNNING"
        assert state_of(api, "task_runs", task_run) == "RUNNING"
        assert set(training) & set(job_processes(home)), "training ended before the page was read"
        browser.leave()  # read: the page stops re-rendering the streamed lines while the run is stopped
        assert shown, f"no progress line of the trainer in the flow run's page; page text:\n{text[-3000:]}"
        assert "Running" in text, text[-3000:]
        # Every progress line the child printed reached the run's logs, the first ones included (a line
        # after a progress bar's frame was lost before supervise.py split them).
        steps = relayed_steps(api, task_run)
        assert steps and sorted(set(steps)) == list(range(1, max(steps) + 1)), steps  # a quiet record may repeat one

        run.send_signal(signal.SIGTERM)  # `dojoflow run` stops the step's whole process group
        assert run.wait(timeout=CEILING_S) == 130, told()
        assert not job_processes(home), f"training processes outlived the run: {job_processes(home)}"
        assert state_of(api, "flow_runs", flow_run) == "CANCELLED"
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()
