"""`dojoflow run` as a user runs it: a real subprocess with its own temporary Prefect server
on a fresh home (no PREFECT_API_URL; after the first Ctrl-C, the server `dojoflow server start`
would keep, here the worker's), its stdout piped. What reaches the terminal is a plain progress
display and a summary; the libraries' output goes to the run's log file; Ctrl-C and SIGTERM stop
the run within seconds, mark it cancelled, and the next run resumes it (one sequence of three
runs on one home, `stopped_twice_then_rerun`, read by two tests).

Waits are on events (a stopped run's training writes a file once it holds where the test
signals it: tests/flows/terminal_child.py; the process exiting) with generous ceilings, so
the tests pass on a loaded machine.
"""

from __future__ import annotations

import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from storage import catalog
from storage.store import Store
from tests.flows.harness_server import as_if_dojoflow_server_started, flow_run_state
from tests.flows.terminal_child import HOLD, STOP_AT_SAVE

ROOT = Path(__file__).resolve().parents[2]
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
CEILING_S = 900  # only a hung run reaches this


def write_config(tmp_path: Path, max_steps: int, save_steps: int) -> Path:
    cfg = {
        "name": "term",
        "sources": [{"sample": "NatBasics"}],
        "max_steps": 1,
        "trainers": {
            "sft": {
                "model": "builtin:tiny-causal-lm",
                "training": {
                    "max_steps": max_steps,
                    "per_device_train_batch_size": 4,
                    "logging_steps": 1,
                    "save_steps": save_steps,
                },
                "evaluation": {"top_k": 2, "max_new_tokens": 4, "max_eval_examples": 2},
            },
            "retriever": None,
            "progress": None,
        },
        "evaluation": {"splits": ["test"]},
    }
    path = tmp_path / "term.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def user_env() -> dict:
    """A user's shell: no Prefect server configured, so the run starts its own."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "DOJOFLOW_"))}
    env.update(PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1")
    return env


def start_run(cfg: Path, home: Path, hook: dict | None = None) -> subprocess.Popen:
    """`dojoflow run CFG --home HOME`; with `hook`, through tests/flows/terminal_child.py and
    its hook's variable set (the same command, sft's training swapped)."""
    module = "tests.flows.terminal_child" if hook else "flows.cli"
    return subprocess.Popen(
        [sys.executable, "-m", module, "run", str(cfg), "--home", str(home)],
        cwd=ROOT,
        env={**user_env(), **(hook or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )


def wait_for(what: str, check, proc: subprocess.Popen):
    deadline = time.monotonic() + CEILING_S
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        if proc.poll() is not None:
            out, err = proc.communicate()
            pytest.fail(f"{what}: the run exited ({proc.returncode}) first\n{out[-3000:]}\n{err[-3000:]}")
        time.sleep(0.2)
    pytest.fail(f"{what}: never happened")


def finish(proc: subprocess.Popen) -> tuple[str, str]:
    try:
        return proc.communicate(timeout=CEILING_S)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)


def the_log(out: str) -> Path:
    return Path(re.search(r"^log: (.+\.log)$", out, re.M).group(1))


def prefect_state(home: Path, run_id: str) -> str:
    with sqlite3.connect(home / "prefect" / "prefect.db") as db:
        return db.execute("SELECT state_type FROM flow_run WHERE id = ?", [run_id]).fetchone()[0]


def interrupt_when_held(cfg: Path, home: Path, sig: signal.Signals, hook: str) -> tuple[str, str]:
    """Signal the run once its training holds (terminal_child's `hook`: real SFT after its first
    Trainer checkpoint, or a training that holds without a model); what it printed."""
    held = home.parent / f"held-{sig.name}"
    proc = start_run(cfg, home, {hook: str(held)})
    try:
        wait_for(f"the training of step 1 holding ({hook})", held.exists, proc)
        os.killpg(proc.pid, sig)  # what a terminal's Ctrl-C does: the whole foreground group
        out, err = proc.communicate(timeout=120)  # "within seconds": a generous ceiling for a loaded machine
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, f"{out}\n{err}"
    assert "Traceback" not in err and "Traceback" not in out, err
    assert f"stopped ({sig.name})" in out and "is marked cancelled" in out, out
    return out, err


@pytest.fixture(scope="module")
def stopped_twice_then_rerun(tmp_path_factory, prefect) -> dict:
    """One home, three piped runs of one config (both tests below read them):

    1. on a fresh home (no Prefect database yet: its temporary server migrates one, as a new
       user's first run does), real SFT stopped by Ctrl-C at its first Trainer checkpoint
       (checkpoint-2); it marks the run cancelled on the temporary server before it stops that
       server;
    2. as after `dojoflow server start` (the worker's server, as `server.json` names it: the
       rest is not about the temporary server), stopped by SIGTERM while its training holds
       without a model: SIGTERM reaches the handler SIGINT does (flows/cli/run_session.py),
       stopping real training is run 1's, and this run needs no transformers, PEFT or TRL;
    3. a rerun that resumes the training from run 1's checkpoint-2 and finishes.

    One sequence instead of a fresh home's uninterrupted first run plus the stopped runs on a
    second home: a `dojoflow run` process (imports, server, model, evaluation, report) less."""
    tmp_path = tmp_path_factory.mktemp("term")
    home = tmp_path / "home"
    cfg = write_config(tmp_path, max_steps=4, save_steps=2)
    assert not (home / "prefect" / "prefect.db").exists()  # a fresh home
    interrupt_when_held(cfg, home, signal.SIGINT, STOP_AT_SAVE)
    assert [p.name for p in (home / "work" / "sft").rglob("checkpoint-*")] == ["checkpoint-2"]
    as_if_dojoflow_server_started(home)
    sigterm_out, _ = interrupt_when_held(cfg, home, signal.SIGTERM, HOLD)
    runs = catalog.query(Store.open(home), "SELECT run_id, status FROM runs ORDER BY started_at").to_pylist()
    published = (  # before the rerun: what the stopped runs left in checkpoints/sft
        [p.name for p in (home / "checkpoints" / "sft").glob("*") if ".tmp-" not in p.name]
        if (home / "checkpoints" / "sft").exists()
        else []
    )
    proc = start_run(cfg, home)
    out, err = finish(proc)
    return {"home": home, "sigterm_out": sigterm_out, "runs": runs, "published": published,
            "returncode": proc.returncode, "out": out, "err": err}  # fmt: skip


def test_a_piped_run_prints_plain_progress_and_a_summary_and_the_library_output_goes_to_the_log(
    stopped_twice_then_rerun,
):
    """The rerun (3. above): a piped run that trains, evaluates and reports."""
    home, out, err = (stopped_twice_then_rerun[k] for k in ("home", "out", "err"))
    assert stopped_twice_then_rerun["returncode"] == 0, f"{out}\n{err}"
    terminal = out + err
    assert "\r" not in terminal and not ANSI.search(terminal), terminal
    for noise in ("TIP", "{'loss'", "Warning", "warn(", "it/s", "Traceback", "INFO", "Loading weights"):
        assert noise not in terminal, f"{noise!r} reached the terminal:\n{terminal}"
    assert "step 1/1 NatBasics · sft · train" in out and "step 1/1 NatBasics · sft · evaluate" in out
    # the trainer's optimizer steps, latest loss and time left (tasks/trainers/log_progress.py): plain
    # output prints the first step this run trained (3: after run 1's checkpoint-2, resumed) and the last
    train = r"^\d\d:\d\d  step 1/1 NatBasics · sft · train · optimizer step"
    # (without a loss only when the step took over 30 s and a quiet record came before its log line)
    first = next(line for line in out.splitlines() if re.match(train, line))
    assert re.match(rf"{train} 3/4( · loss [0-9.e+-]+)? · about [0-9hms]+ left$", first), out
    assert re.search(rf"{train} 4/4 · loss [0-9.e+-]+ · about 0s left$", out, re.M), out
    # the one-screen summary: the step's headline figure with its interval and n, beside its baseline
    figure = r"^1 NatBasics +sft +[0-9.]+ +top1_accuracy +[0-9.]+ \[[0-9.]+, [0-9.]+\] \(n=\d+\) +(BELOW )?[0-9.]+$"
    assert re.search(figure, out, re.M), out
    assert out.rstrip().splitlines()[-1].startswith("every figure: dojoflow metrics --run "), out
    assert [p.parent.parent.name for p in (home / "checkpoints").glob("*/*/dojoflow-checkpoint.json")] == ["sft"]
    report = re.search(r"^report: (\S+)$", out, re.M).group(1)
    assert Path(report).is_file()
    log = the_log(out).read_text()
    assert "{'loss'" in log and "SFT on 95 examples" in log and "Finished in state Completed" in log


def test_ctrl_c_then_sigterm_stop_the_run_mark_it_cancelled_and_a_rerun_resumes(stopped_twice_then_rerun):
    """Ctrl-C stops a run on its temporary server (it marks the run cancelled there before it
    stops the server); SIGTERM and the rerun then run as after `dojoflow server start`. The
    exit code, the absence of a traceback and the `stopped (SIG...)` line of each stopped run
    are asserted as it stops (`interrupt_when_held`)."""
    home, runs = stopped_twice_then_rerun["home"], stopped_twice_then_rerun["runs"]
    assert "(started by `dojoflow server start`)" in stopped_twice_then_rerun["sigterm_out"]
    assert [r["status"] for r in runs] == ["cancelled", "cancelled"]  # before the rerun
    states = [prefect_state(home, runs[0]["run_id"]), flow_run_state(runs[1]["run_id"])]
    assert states == ["CANCELLED", "CANCELLED"]  # on the temporary server's database, on the worker's server
    assert stopped_twice_then_rerun["published"] == []  # nothing half-trained was published

    out, err = stopped_twice_then_rerun["out"], stopped_twice_then_rerun["err"]
    assert stopped_twice_then_rerun["returncode"] == 0, f"{out}\n{err}"
    checkpoint = re.search(r"^checkpoint step 1 sft: (\S+)$", out, re.M).group(1)
    manifest = yaml.safe_load(Path(checkpoint, "dojoflow-checkpoint.json").read_text())
    assert manifest["checkpoint"]["figures"]["resumed_from"], manifest["checkpoint"]["figures"]


def test_the_display_is_one_live_line_on_a_terminal_and_plain_lines_otherwise():
    import io

    from rich.console import Console

    from flows.cli.terminal import RunDisplay

    piped = io.StringIO()
    display = RunDisplay(Console(file=piped, width=200))
    display.show("train", 2, 3, "sft", "[red]Lemmas")  # markup-like names are shown as they are
    display.show("train", 2, 3, "sft", "[red]Lemmas")  # unchanged: no second line
    display.show("evaluate", 2, 3, "sft", "[red]Lemmas")
    display.close()
    lines = piped.getvalue().splitlines()
    assert [line[7:] for line in lines] == [
        "step 2/3 [red]Lemmas · sft · train",
        "step 2/3 [red]Lemmas · sft · evaluate",
    ]
    assert "\r" not in piped.getvalue() and "\x1b" not in piped.getvalue()

    tty = io.StringIO()
    display = RunDisplay(Console(file=tty, force_terminal=True, width=200))
    display.show("train", 2, 3, "sft", "Lemmas")
    display.progress.refresh()
    display.show("report")
    display.progress.refresh()
    assert display.progress.tasks[0].completed == 3  # the report comes after every step
    display.close()
    assert "step 2/3 Lemmas · sft · train" in tty.getvalue() and "1/3" in tty.getvalue()


def test_a_launched_workers_training_progress_reaches_the_display_as_in_process(monkeypatch):
    """The worker's progress record goes to stdout as JSON (worker.JsonLines), the supervisor
    relays it (supervise.relay) and the display (set by `dojoflow run`) shows its figures;
    plain output prints the first and the last step and is quiet between."""
    import io
    import json
    import logging

    from rich.console import Console

    from flows import ui
    from flows.cli.terminal import RunDisplay
    from tasks.trainers import supervise, worker
    from tasks.trainers.log_progress import ProgressClock

    lines: list[str] = []
    monkeypatch.setattr(worker.sys, "stdout", type("Out", (), {"write": lines.append, "flush": lambda self: None})())
    progress_log = logging.getLogger("tasks.trainers.progress")
    jsonl = worker.JsonLines()
    progress_log.addHandler(jsonl)
    now = [100.0]
    clock = ProgressClock(clock=lambda: now[0])
    try:
        clock.begin(0)
        for step in (1, 2, 3, 4):
            now[0] += 10.0
            clock.emit(step, 4, {"loss": 2.0 / step})
    finally:
        progress_log.removeHandler(jsonl)
    assert json.loads(lines[0].removeprefix(worker.RECORD_MARK))["training_progress"] == {
        "step": 1,
        "total": 4,
        "loss": 2.0,
        "seconds_left": 30.0,
    }

    piped = io.StringIO()
    display = RunDisplay(Console(file=piped, width=200))
    ui.set_display(display)
    try:
        display.show("train", 2, 3, "sft", "Lemmas")
        for line in lines:
            supervise.relay(f"[rank 0] {line}", supervise.Output())
    finally:
        ui.set_display(None)
        display.close()
    assert [line[7:] for line in piped.getvalue().splitlines()] == [
        "step 2/3 Lemmas · sft · train",
        "step 2/3 Lemmas · sft · train · optimizer step 1/4 · loss 2 · about 30s left",
        "step 2/3 Lemmas · sft · train · optimizer step 4/4 · loss 0.5 · about 0s left",
    ]


def _six_step_run() -> tuple[dict, list[dict]]:
    """Six steps of sft and grpo over six repositories, each evaluated on every repository seen
    so far on val and test with sft's four figures and a count, and proving on the last step."""
    names = ["NatBasics", "ListLemmas", "Arith", "Sets", "Graphs", "Orders"]
    steps, rows = [], []
    for step, name in enumerate(names, start=1):
        trainers = {
            "sft": {"train_state": "Completed", "checkpoint": {"path": f"/c/sft/{step}", "figures": {"loss": 3.5}}},
            "grpo": {"train_state": "Cached", "checkpoint": {"path": f"/c/grpo/{step}", "figures": {}}},
        }
        steps.append({"step": step, "name": name, "trainers": trainers})
        for seen in names[:step]:
            for split in ("val", "test"):
                at = {"step": step, "trainer": "sft", "split": split, "repository": seen, "repo_id": seen}
                at |= {"split_kind": "random", "checkpoint_id": f"sft{step}", "count": 95}
                top1 = 0.1 if (seen, split) == ("Orders", "test") else 0.5  # the last step is below its baseline
                rows += [
                    {**at, "metric": "completion_loss", "value": 3.88},
                    {**at, "metric": "top1_accuracy", "value": top1, "ci_low": top1 - 0.05, "ci_high": top1 + 0.1},
                    {**at, "metric": "top4_accuracy", "value": 0.6},
                    {**at, "metric": "top1_majority_baseline", "value": 0.3},
                    {**at, "metric": "examples", "value": 95.0},
                ]
        rows.append({"step": step, "trainer": "grpo", "split": "train", "repository": name, "repo_id": name,
                     "split_kind": "random", "checkpoint_id": f"g{step}", "metric": "train_reward", "value": 0.5,
                     "count": 6})  # fmt: skip
    proving = {"step": 6, "trainer": "proving", "split": "test", "repo_id": "Orders", "checkpoint_id": "sft6"}
    rows += [
        {
            **proving,
            "split_kind": "random",
            "metric": "repl_pass@4",
            "value": 0.25,
            "count": 4,
            "ci_low": 0.05,
            "ci_high": 0.4,
        },
        {**proving, "split_kind": "random", "metric": "baseline_repl_pass@4", "value": 0.5, "count": 4},
    ]
    return {"run_id": "r1", "report": "/x/report.md", "steps": steps}, rows


def test_the_end_summary_fits_one_screen_marks_figures_below_their_baseline_and_names_the_full_table():
    """106 lines before (a row per step, trainer, repository, split and metric, a line per checkpoint);
    now one row per step and trainer, a mark where a figure is below its baseline, the command
    for the whole table last."""
    import io

    from rich.console import Console

    from flows.cli.terminal import print_summary

    result, rows = _six_step_run()
    out = io.StringIO()
    print_summary(Console(file=out, width=80), result, rows, Path("/x/run.log"))
    lines = out.getvalue().splitlines()
    assert len(lines) <= 24 and max(len(line) for line in lines) <= 80, "\n".join(lines)
    assert lines[-1] == "every figure: dojoflow metrics --run r1; checkpoints: dojoflow checkpoints", lines
    text = "\n".join(lines)
    assert re.search(r"^1 NatBasics +sft +3.5 +top1_accuracy +0.5 \[0.45, 0.6\] \(n=95\) +0.3$", text, re.M), text
    assert re.search(r"^6 Orders +sft +3.5 +top1_accuracy .* BELOW 0.3$", text, re.M), text
    assert re.search(r"^1 NatBasics +grpo\* +reward train +0.5 \(n=6\)$", text, re.M), text
    assert re.search(r"^6 Orders +proving +repl_pass@4 +0.25 \[0.05, 0.4\] \(n=4\) +BELOW 0.5$", text, re.M), text
    assert "examples" not in text and "/c/sft/1" not in text
