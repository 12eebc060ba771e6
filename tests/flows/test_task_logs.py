"""Log lines of the plain logic under tasks/ and storage/ (standard `logging`, no Prefect)
reach the task run's logs in Prefect, where the UI shows them (flows/ui.py)."""

from __future__ import annotations

import re
import time

import httpx
import pytest

from .fixtures import config


def task_run_logs(api: str, flow_run_id: str, task_run_prefix: str) -> list[str]:
    runs = (
        httpx.post(f"{api}/task_runs/filter", json={"flow_runs": {"id": {"any_": [flow_run_id]}}}, timeout=30)
        .raise_for_status()
        .json()
    )
    ids = [r["id"] for r in runs if r["name"].startswith(task_run_prefix)]
    assert ids, [r["name"] for r in runs]
    logs = (
        httpx.post(f"{api}/logs/filter", json={"logs": {"task_run_id": {"any_": ids}}}, timeout=30)
        .raise_for_status()
        .json()
    )
    return [f"{entry['name']}: {entry['message']}" for entry in logs]


# The tests read log lines and cards, not what was learned: one optimizer step and two short
# evaluated examples per split are enough (tests/flows/fixtures.py's TINY_SFT trains two).
LOGGED_SFT = {
    "training": {"max_steps": 1, "per_device_train_batch_size": 4, "logging_steps": 1, "save_steps": 1},
    "evaluation": {"top_k": 2, "max_new_tokens": 4, "max_eval_examples": 2},
}


@pytest.fixture(scope="module")
def two_step_run(prefect, tmp_path_factory) -> dict:
    """One curriculum run of two steps on the session server, read by both tests below."""
    from prefect.logging.handlers import APILogWorker

    from flows.curriculum import curriculum

    root = tmp_path_factory.mktemp("task-logs")
    result = curriculum(config=config(root, root / "home", n=2, sft=LOGGED_SFT))
    APILogWorker.drain_all()  # the event the tests wait on: every log line of the run is sent
    return result


def test_a_log_line_of_the_sft_trainer_is_in_the_train_task_runs_logs(two_step_run):
    from prefect.settings import PREFECT_API_URL

    result = two_step_run
    deadline, lines = time.monotonic() + 300, []  # the log worker sends in batches: wait for the line
    while time.monotonic() < deadline:
        lines = task_run_logs(PREFECT_API_URL.value(), result["run_id"], "train-sft")
        if any(line.startswith("tasks.sft.train: SFT on ") for line in lines):
            break
        time.sleep(0.5)
    assert any(line.startswith("tasks.sft.train: SFT on ") for line in lines), lines
    # The loss curve: one line per logging step of the Trainer, in the same task run's logs.
    assert any(re.match(r"tasks\.trainers\.progress: step 1/\d+: loss [0-9.]+", line) for line in lines), lines
    deadline, evaluated = time.monotonic() + 300, []
    while time.monotonic() < deadline and not evaluated:
        lines = task_run_logs(PREFECT_API_URL.value(), result["run_id"], "evaluate-sft")
        evaluated = [line for line in lines if line.startswith("tasks.sft.evaluate: evaluated ")]
        time.sleep(0.5)
    assert evaluated and "completion_loss" in evaluated[0], lines


def test_the_run_has_one_metrics_card_a_progress_card_in_words_and_task_names_without_hash_suffixes(two_step_run):
    from prefect.settings import PREFECT_API_URL

    result = two_step_run
    api = PREFECT_API_URL.value()
    body = {"artifacts": {"flow_run_id": {"any_": [result["run_id"]]}}}
    artifacts = httpx.post(f"{api}/artifacts/filter", json=body, timeout=30).raise_for_status().json()
    tables = [a for a in artifacts if a["type"] == "table"]
    assert [a["key"] for a in tables] == ["test-metrics"], [(a["type"], a["key"]) for a in artifacts]
    progress = [a for a in artifacts if a["type"] == "progress"]
    assert len(progress) == 1 and progress[0]["description"] == "2 of 2 curriculum steps of `test` done (100%)"
    runs = (
        httpx.post(f"{api}/task_runs/filter", json={"flow_runs": {"id": {"any_": [result["run_id"]]}}}, timeout=30)
        .raise_for_status()
        .json()
    )
    suffixed = [r["name"] for r in runs if re.search(r"-[0-9a-f]{3}$", r["name"])]
    assert not suffixed, suffixed
