"""deployments/automations.yaml on a real `prefect server` (API, UI and services: triggers,
actions) as `dojoflow server start` runs it, installed by `dojoflow server setup --home` with its webhook block pointed at a listener on
127.0.0.1: a planted regression, a failed nightly and a published checkpoint each fire what
they should, with the run's link and the figures. Bad input to setup is refused, one line,
exit 2, nothing installed.

    .venv/bin/python -m pytest tests/e2e/test_automations.py -m e2e -q -p no:cacheprovider
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from tests.e2e.test_deployment import EVENT_CEILING_S, ROOT, child_env, free_port, wait_for
from tests.prefect_db import seed_prefect_home

DOJOFLOW = [sys.executable, "-m", "flows.cli"]


class Listener:
    """An HTTP server on 127.0.0.1 that keeps every JSON body POSTed to it."""

    def __init__(self):
        received = self.received = queue.Queue()
        self.seen: list[dict] = []  # every notification taken from the queue, in order

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                received.put(json.loads(body or b"{}"))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def next_where(self, predicate, timeout: float = EVENT_CEILING_S) -> dict:
        """The first notification (arriving within `timeout`) for which `predicate` holds."""
        import time

        deadline = time.monotonic() + timeout
        for got in self.seen:
            if predicate(got):
                return got
        while True:
            try:
                got = self.received.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                pytest.fail(f"no notification arrived for the expected event; got {self.seen}")
            self.seen.append(got)
            if predicate(got):
                return got


def _setup(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*DOJOFLOW, "server", "setup", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )


def run_mode(env: dict, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "tests.e2e.alerting_runs", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout.strip().splitlines()[-1]


@pytest.mark.e2e
def test_setup_installs_the_automations_and_they_page_the_webhook(tmp_path, migrated_prefect_db):
    port = free_port()
    api, ui = f"http://127.0.0.1:{port}/api", f"http://127.0.0.1:{port}"
    env = {**child_env(tmp_path, api), "PREFECT_LOGGING_LEVEL": "WARNING"}  # the runs': this server
    user = {k: v for k, v in env.items() if k != "PREFECT_API_URL"}  # the user's shell: `--home` finds it
    home = seed_prefect_home(tmp_path / "home", migrated_prefect_db)  # spares the server its migrations
    listener = Listener()

    def setup(*args: str) -> subprocess.CompletedProcess:
        return _setup(user, "--home", str(home), *args)

    try:
        started = subprocess.run(
            [*DOJOFLOW, "server", "start", "--home", str(home), "--port", str(port)],
            cwd=ROOT,
            env=user,
            capture_output=True,
            text=True,
            timeout=EVENT_CEILING_S,
        )
        assert started.returncode == 0 and f"Prefect server started: {ui}" in started.stdout, started
        missing_deployment = setup("--webhook", listener.url)  # prove/sorry is not deployed yet
        _refused(missing_deployment, "runs the deployment 'prove/sorry', which does not exist", api)

        # prove/sorry, as `prefect deploy` creates it (no worker: the run the trigger creates waits)
        flow_id = httpx.post(f"{api}/flows/", json={"name": "prove"}).raise_for_status().json()["id"]
        httpx.post(
            f"{api}/deployments/", json={"name": "sorry", "flow_id": flow_id, "entrypoint": "flows/prove.py:prove"}
        ).raise_for_status()
        _refused_inputs(tmp_path, setup, api)
        done = setup("--webhook", listener.url)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "installed 5 automations" in done.stdout
        assert len(_automations(api)) == 5

        # Setup again: the five are replaced, not doubled. This second install is the proactive trigger's,
        # its 26 hours made 10 s (Prefect's least): no nightly completed. Installed now, so its 10 s pass
        # while the runs below go; the other four are the shipped file's own text (the one `within` is
        # all that differs), so they page as shipped.
        shipped = (ROOT / "deployments" / "automations.yaml").read_text()
        assert shipped.count("within: 93600") == 1
        quick = tmp_path / "quick.yaml"
        quick.write_text(shipped.replace("within: 93600", "within: 10"))
        done = setup("--file", str(quick), "--webhook", listener.url)  # again: replaced, not doubled
        assert done.returncode == 0 and len(_automations(api)) == 5, done.stdout + done.stderr

        # A planted regression (the first repository is worse at step 2), a failed nightly, a checkpoint
        ids = run_mode(
            env, "all", str(home), str(tmp_path), str(tmp_path / "night"), str(tmp_path / "export-0"), "/ckpt/sft/abc"
        )
        run_id, night, _ = ids.split()
        got = listener.next_where(lambda n: "regressed" in n["subject"])
        assert got["subject"].startswith("Dojoflow: top1_accuracy regressed on syn")
        assert f"run: {ui}/runs/flow-run/{run_id}" in got["body"]
        figures = json.loads(got["body"].split("figures: ", 1)[1])
        assert (figures["value_when_learned"], figures["value"], figures["learned_step"], figures["step"]) == (
            0.9,
            0.2,
            1,
            2,
        )
        assert figures["margin"] == 0.1 and figures["run_id"] == run_id

        got = listener.next_where(lambda n: n["subject"].startswith("Dojoflow: nightly run "))  # not "no nightly run"
        assert "ended Failed" in got["subject"] and f"run: {ui}/runs/flow-run/{night}" in got["body"]

        # The published checkpoint started prove/sorry with it
        def prove_run():
            body = {"deployments": {"name": {"any_": ["sorry"]}}}
            runs = httpx.post(f"{api}/flow_runs/filter", json=body, timeout=10).json()
            return runs[0] if runs else None

        prove = wait_for("the prove/sorry run", prove_run, EVENT_CEILING_S, every=0.5)
        assert prove["parameters"]["config"] == {"home": str(home), "checkpoint": "/ckpt/sft/abc"}

        # The proactive trigger (installed above) paged: no nightly run completed within its 10 s
        got = listener.next_where(lambda n: "no nightly run completed" in n["subject"])
        assert f"automation: {ui}/automations/automation/" in got["body"]
    finally:
        listener.server.shutdown()
        subprocess.run([*DOJOFLOW, "server", "stop", "--home", str(home)], cwd=ROOT, env=user, timeout=120)


def _refused(done: subprocess.CompletedProcess, says: str, api: str) -> None:
    """A bad input: one line naming it, exit 2, no automation and no block written."""
    lines = (done.stdout + done.stderr).strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and says in lines[0], (done.returncode, lines)
    assert _automations(api) == []
    blocks = httpx.post(f"{api}/block_documents/filter", json={}, timeout=10).json()
    assert [b for b in blocks if b["name"] == "dojoflow-alerts"] == []


def _refused_inputs(tmp_path, setup, api: str) -> None:
    closed = free_port()
    unreachable = setup("--webhook", f"http://127.0.0.1:{closed}/hook")
    no_block = setup()  # custom-webhook/dojoflow-alerts does not exist
    typo = tmp_path / "typo.yaml"
    typo.write_text("automations:\n  - name: x\n    trigger: {type: event, expect: [a]}\n    actions: [{type: nope}]\n")
    bad_action = setup("--file", str(typo), "--webhook", f"http://127.0.0.1:{closed}/hook")
    for done, says in (
        (unreachable, f"127.0.0.1:{closed} is unreachable"),
        (no_block, "the block custom-webhook/dojoflow-alerts, which does not exist"),
        (bad_action, "typo.yaml, automations[0] (x): actions.0"),
    ):
        _refused(done, says, api)


def _automations(api: str) -> list[dict]:
    return httpx.post(f"{api}/automations/filter", json={}, timeout=10).raise_for_status().json()


def _get(url: str):
    try:
        r = httpx.get(url, timeout=10)
    except httpx.HTTPError:
        return None
    return r.json() if r.status_code == 200 else None
