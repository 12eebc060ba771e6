"""The curriculum flow on the embedded Prefect server, with real SFT on a tiny model: the first
run and its cached rerun, a changed setting, every trainer, resume after SIGKILL. Where a test
asserts orchestration, not training, it trains the torch-free `echo` trainer
(tests/echo_trainer.py): resume after a failed evaluation, a skipped step, a deleted
checkpoint folder, two runs at once (the step locks)."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from storage import catalog
from storage.store import Store
from tasks.trainers import registry

from . import cli_child, flaky
from .fixtures import TINY_SFT, config, small_sources, task_run_states, train_states

ROOT = Path(__file__).resolve().parents[2]

# TINY_SFT with less of what no test here measures: one training step (save_steps 1: a
# Trainer checkpoint is still written and published), and 2 evaluation examples per
# (repository, split) of at most 4 new tokens; top_k stays 2, as top2_accuracy is asserted.
# These tests check what is trained, cached, rolled back or reported, not how well.
SFT = {
    "training": {**TINY_SFT["training"], "max_steps": 1},
    "evaluation": {**TINY_SFT["evaluation"], "max_new_tokens": 4, "max_eval_examples": 2},
}


@pytest.fixture(scope="module", autouse=True)
def _imports_frozen():
    """This file's tests run with the objects of the trainers' libraries frozen
    (tasks/lean/closing.heap_frozen, unfrozen after the last test): transformers' Trainer runs a
    full garbage collection at every training start (accelerate's free_memory), ~0.4 s of CPU
    here when it walks torch's, transformers' and Prefect's ~550k objects, half of a tiny SFT
    step; frozen, it walks only what the tests made. The modules are imported first (the first
    test would import them), so that they are among the frozen objects."""
    import matplotlib.pyplot  # noqa: F401  (the report's figure)
    import trl  # noqa: F401

    from tasks.lean.closing import heap_frozen

    trl.SFTTrainer, trl.SFTConfig  # noqa: B018  (trl's lazy modules: transformers' Trainer, peft, datasets)
    with heap_frozen():
        yield


@pytest.fixture
def flaky_echo(monkeypatch, tmp_path):
    """The torch-free `echo` trainer (from its own previous checkpoint) whose evaluation fails
    while the returned file exists (tests/flows/flaky.py): the failure test asserts what is
    rolled back and redone, not training."""
    from tests.echo_trainer import ECHO

    registry.register(dataclasses.replace(ECHO, starts_from=None, evaluate="tests.flows.flaky:evaluate_echo"))
    fail = tmp_path / "fail-now"
    monkeypatch.setattr(flaky, "FAIL_FILE", fail)
    yield fail
    registry.unregister("echo")


def _echo_only(cfg):
    """`cfg` training the `echo` trainer alone (SFT off)."""
    return cfg.model_validate({**cfg.model_dump(), "trainers": {"sft": None, "echo": {}}})


@pytest.fixture(scope="module")
def first_home(prefect, tmp_path_factory):
    """One home's first run and an unchanged second run, with what the first left in the store
    and its report as they were right after it. test_first_run... reads it; the changed-setting
    test goes on from it, so the 3-step first run is trained once for both."""
    from flows.curriculum import curriculum

    root = tmp_path_factory.mktemp("first-home")
    cfg = config(root, root / "home", sft=SFT)
    first = curriculum(config=cfg)
    rows = catalog.query(
        Store.open(root / "home"), "SELECT step, repo_id, split, metric, value FROM metrics"
    ).to_pylist()
    report = Path(first["report"])
    seen = {
        "exists": report.exists(),
        "png": (report.parent / "metrics.png").stat().st_size if report.exists() else 0,
        "text": report.read_text() if report.exists() else "",
    }
    second = curriculum(config=cfg)
    return {"root": root, "home": root / "home", "first": first, "rows": rows, "report": seen, "second": second}


def test_first_run_trains_every_step_and_a_second_run_is_all_cached(first_home):
    first, rows = first_home["first"], first_home["rows"]
    assert train_states(first) == ["Completed"] * 3
    # each step continues from the previous step's checkpoint
    parents = [s["trainers"]["sft"]["checkpoint"]["parent_id"] for s in first["steps"]]
    ids = [s["trainers"]["sft"]["checkpoint"]["checkpoint_id"] for s in first["steps"]]
    assert parents == [None, ids[0], ids[1]]
    # curriculum order: easiest (fewest tactics per proof) first
    assert [s["name"] for s in first["steps"]] == ["syn0", "syn1", "syn2"]
    steps_per_repo = {}
    for r in rows:
        steps_per_repo.setdefault(r["repo_id"], set()).add(r["step"])
    # evaluated on every repository seen so far: the first repository at all 3 steps
    assert sorted(len(v) for v in steps_per_repo.values()) == [1, 2, 3]
    assert {r["metric"] for r in rows} >= {"completion_loss", "top1_accuracy", "top2_accuracy"}
    report = first_home["report"]
    assert report["exists"] and report["png"] > 1000
    assert "syn2" in report["text"]

    second = first_home["second"]
    assert train_states(second) == ["Cached"] * 3
    assert [s["trainers"]["sft"]["evaluate_state"] for s in second["steps"]] == ["Cached"] * 3
    assert second["checkpoints"] == first["checkpoints"]


def test_a_failure_in_step_two_then_a_rerun_caches_step_one_and_redoes_the_rest(prefect, tmp_path, flaky_echo):
    from flows.curriculum import curriculum

    cfg = _echo_only(config(tmp_path, tmp_path / "home"))
    flaky_echo.write_text("fail")
    with pytest.raises(flaky.InjectedFailure):
        curriculum(config=cfg)
    # the failed step's checkpoint was rolled back with its evaluation: nothing half-done is kept
    published = list((tmp_path / "home" / "checkpoints" / "echo").iterdir())
    assert len(published) == 1
    store = Store.open(tmp_path / "home")
    assert [r["status"] for r in catalog.query(store, "SELECT status FROM runs").to_pylist()] == ["failed"]
    registered = catalog.query(store, "SELECT path FROM checkpoints").column("path").to_pylist()
    assert registered == [str(published[0])]  # step 2's rolled-back row went with its folder
    flaky_echo.unlink()
    rerun = curriculum(config=cfg)
    assert train_states(rerun, "echo") == ["Cached", "Completed", "Completed"]
    assert (
        rerun["steps"][1]["trainers"]["echo"]["checkpoint"]["parent_id"]
        == rerun["steps"][0]["trainers"]["echo"]["checkpoint"]["checkpoint_id"]
    )
    status = catalog.query(store, "SELECT status FROM runs WHERE run_id = $r", params={"r": rerun["run_id"]})
    assert status.to_pylist() == [{"status": "completed"}]
    # the rerun's metrics are whole: step 1's come from its cached evaluation
    steps = (
        catalog.query(
            store, "SELECT DISTINCT step FROM metrics WHERE run_id = $r ORDER BY step", params={"r": rerun["run_id"]}
        )
        .column("step")
        .to_pylist()
    )
    assert steps == [1, 2, 3]


def test_a_changed_setting_retrains_from_the_first_step_it_affects_and_no_earlier(first_home):
    from flows.curriculum import curriculum

    # goes on from first_home's 3-step runs (trained once for this test and the first-run test)
    tmp_path, home = first_home["root"], first_home["home"]
    # fewer steps (max_steps) is a prefix of the same curriculum: nothing to train
    two = curriculum(config=config(tmp_path, home, max_steps=2, sft=SFT))
    assert train_states(two) == ["Cached", "Cached"]
    # a fourth repository affects step 4 only
    four = curriculum(config=config(tmp_path, home, n=4, sft=SFT))
    assert train_states(four) == ["Cached", "Cached", "Cached", "Completed"]
    # an evaluation-only change re-evaluates and retrains nothing
    evals = curriculum(config=config(tmp_path, home, evaluation={"splits": ["test"]}, sft=SFT))
    assert train_states(evals) == ["Cached"] * 3
    assert [s["trainers"]["sft"]["evaluate_state"] for s in evals["steps"]] == ["Completed"] * 3
    # so does a trainer's own evaluation setting, and a logging-only training argument
    top1 = {
        **SFT,
        "evaluation": {**SFT["evaluation"], "top_k": 1},
        "training": {**SFT["training"], "logging_steps": 2},
    }
    evals = curriculum(config=config(tmp_path, home, evaluation={"splits": ["test"]}, sft=top1))
    assert train_states(evals) == ["Cached"] * 3
    assert [s["trainers"]["sft"]["evaluate_state"] for s in evals["steps"]] == ["Completed"] * 3
    metrics = (
        catalog.query(
            Store.open(home), "SELECT DISTINCT metric FROM metrics WHERE run_id = $r", params={"r": evals["run_id"]}
        )
        .column("metric")
        .to_pylist()
    )
    assert "top1_accuracy" in metrics and "top2_accuracy" not in metrics
    # a trainer setting affects every step from the first
    changed = {**SFT, "training": {**SFT["training"], "learning_rate": 1e-3}}
    lr = curriculum(config=config(tmp_path, home, sft=changed))
    assert train_states(lr) == ["Completed"] * 3


def test_a_trainer_with_nothing_to_learn_at_step_one_is_recorded_as_skipped_and_the_run_goes_on(prefect, tmp_path):
    # Orchestration only: the torch-free `echo` trainer (real SFT's own skip: tests/tasks/test_sft.py)
    from flows.curriculum import curriculum
    from tests.echo_trainer import ECHO

    registry.register(
        dataclasses.replace(ECHO, starts_from=None, train="tests.flows.flaky:echo_train_skipping_first_step")
    )
    try:
        result = curriculum(config=_echo_only(config(tmp_path, tmp_path / "home", n=2)))
    finally:
        registry.unregister("echo")
    first, second = (s["trainers"]["echo"]["checkpoint"] for s in result["steps"])
    assert first["skipped"] == "injected: nothing to learn at the first step" and not first["has_model"]
    assert second["skipped"] is None and second["has_model"] and second["parent_id"] == first["checkpoint_id"]
    steps = catalog.query(Store.open(tmp_path / "home"), "SELECT DISTINCT step FROM metrics").column("step")
    assert steps.to_pylist() == [2]  # nothing to evaluate at step 1
    assert "skipped: injected: nothing to learn" in Path(result["report"]).read_text()


def test_a_failing_source_is_reported_and_skipped_only_where_the_config_allows(prefect, tmp_path):
    from typer.testing import CliRunner

    from flows.cli import app
    from flows.curriculum import curriculum
    from storage.errors import InputError
    from tasks.config import SourceConfig

    home = tmp_path / "home"
    good = small_sources(tmp_path, 1)
    missing = SourceConfig(repo=str(tmp_path / "no-such-repo"), name="missing")
    strict = config(tmp_path, home, n=1, sft=SFT).model_copy(update={"sources": [missing, *good]})
    with pytest.raises(InputError, match="no-such-repo: does not exist"):
        curriculum(config=strict)
    assert not (home / "checkpoints").exists()  # failed before any training

    lenient = strict.model_copy(update={"continue_on_source_failure": True})
    result = curriculum(config=lenient)
    assert train_states(result) == ["Completed"]
    assert [f["source"] for f in result["failures"]] == ["missing"]
    report = Path(result["report"]).read_text()
    assert "## Failures" in report and "no-such-repo: does not exist" in report

    with pytest.raises(InputError, match="none could be imported or traced.*missing: InputError"):
        curriculum(config=lenient.model_copy(update={"sources": [missing]}))

    # the terminal shows the same: runs with their status, and a run's metrics
    cli = CliRunner()
    runs = cli.invoke(app, ["runs", "--home", str(home)], env={"COLUMNS": "250"})
    assert runs.exit_code == 0, runs.output
    assert runs.output.count("failed") == 2 and runs.output.count("partial") == 1
    metrics = cli.invoke(app, ["metrics", "--home", str(home), "--split", "test"], env={"COLUMNS": "250"})
    assert metrics.exit_code == 0, metrics.output
    assert result["run_id"] in metrics.output and "top1_accuracy" in metrics.output and " val " not in metrics.output
    unknown = cli.invoke(app, ["metrics", "--home", str(home), "--run", "zzz"])
    assert unknown.exit_code == 2 and "matches no run" in unknown.output


EVENT_CEILING_S = 1800  # how long a wait for an event may take before the test calls the run hung


def _run_cli(cfg_path: Path, home: Path, env: dict, **popen) -> subprocess.Popen:
    # `dojoflow run` (flows.cli.main) with the test trainers its hooks in `env` ask for (tests/flows/cli_child.py)
    return subprocess.Popen(
        [sys.executable, "-m", "tests.flows.cli_child", "run", str(cfg_path), "--home", str(home)],
        cwd=ROOT,
        env=env,
        start_new_session=True,
        **popen,
    )


def _cli_env() -> dict:
    # Children talk to this session's test server, so they start fast and we can read their runs.
    from prefect.settings import PREFECT_API_URL

    return {**os.environ, "PYTHONPATH": str(ROOT), "PREFECT_API_URL": PREFECT_API_URL.value()}


def _write_config(tmp_path: Path, trainers: dict, n: int = 3) -> Path:
    sources = [{"export": s.export_path} for s in small_sources(tmp_path, n)]
    path = tmp_path / "cfg.yaml"
    path.write_text(yaml.safe_dump({"name": "cli", "sources": sources, "trainers": trainers}))
    return path


def test_a_run_killed_during_training_resumes_without_retraining_finished_steps(prefect, tmp_path):
    home = tmp_path / "home"
    # Step 2 trains 2 steps, saving a Trainer checkpoint after each. The child's SFT pauses right
    # after step 2's first save (tests/flows/cli_child.py, PAUSE) and says so: the kill lands
    # mid-training on that event, with a step left to train on resume.
    two = {**SFT, "training": {**SFT["training"], "max_steps": 2, "save_steps": 1}}
    cfg = _write_config(tmp_path, {"sft": two}, n=2)
    paused = tmp_path / "paused-after-first-save"
    env = {**_cli_env(), cli_child.PAUSE: str(paused)}
    proc = _run_cli(cfg, home, env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + EVENT_CEILING_S  # only a run that hangs reaches it
        while not paused.exists():
            assert proc.poll() is None, "the run ended before it could be killed"
            assert time.monotonic() < deadline, "step 2 never saved a Trainer checkpoint"
            time.sleep(0.1)
        # step 1 is published and step 2 has saved a complete Trainer checkpoint
        # (tasks/models/loading.py: trainer_state.json is written last). Step 1's work folder
        # (named by its checkpoint id, renamed `<id>.tmp-*` while removed) is not step 2's.
        published = list((home / "checkpoints" / "sft").glob("*/dojoflow-checkpoint.json"))
        step1_ids = {p.parent.name for p in published}
        partial = [
            p
            for p in (home / "work" / "sft").rglob("checkpoint-*/trainer_state.json")
            if p.relative_to(home / "work" / "sft").parts[0].split(".")[0] not in step1_ids
        ]
        assert len(published) == 1 and partial, (published, partial)
        step1 = published[0]
        step1_mtime = step1.stat().st_mtime_ns
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    # nothing half-written was published: at most an orphaned temp folder beside step 1's
    published = [p for p in (home / "checkpoints" / "sft").iterdir() if ".tmp-" not in p.name]
    assert published == [step1.parent]

    from flows.curriculum import curriculum
    from tasks.config import PipelineConfig

    rerun = curriculum(config=PipelineConfig.from_yaml(cfg).model_copy(update={"home": str(home)}))
    assert train_states(rerun) == ["Cached", "Completed"]
    assert step1.stat().st_mtime_ns == step1_mtime
    figures = rerun["steps"][1]["trainers"]["sft"]["checkpoint"]["figures"]
    assert figures.get("resumed_from") == "checkpoint-1", f"step 2 should resume from its Trainer checkpoint: {figures}"
    assert not [p for p in (home / "checkpoints" / "sft").iterdir() if ".tmp-" in p.name]  # the orphan is gone


def test_two_runs_started_at_once_on_one_store_do_each_step_once(prefect, tmp_path):
    # Orchestration only: the torch-free `echo` trainer, whose training of each step waits until
    # the other run reached that step too (waiting for this run's lock, or training it as well):
    # tests/flows/cli_child.py, MEET. The runs overlap at every step however their start is scheduled.
    home, meet = tmp_path / "home", tmp_path / "meet"
    meet.mkdir()
    cfg = _write_config(tmp_path, {"sft": None, "echo": {}}, n=2)
    env = {**_cli_env(), cli_child.MEET: str(meet)}
    procs = [_run_cli(cfg, home, env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=EVENT_CEILING_S)[0] for p in procs]  # the event: both exit
    assert [p.returncode for p in procs] == [0, 0], "\n=====\n".join(o[-6000:] for o in outs)
    runs = catalog.query(Store.open(home), "SELECT run_id FROM runs").to_pylist()
    states = task_run_states([r["run_id"] for r in runs], "train-echo")
    fresh = sorted(name for name, state in states if state == "Completed")
    cached = sorted(name for name, state in states if state == "Cached")
    assert len(states) == 4
    assert len(fresh) == 2 and len(set(fresh)) == 2, states  # each step trained by exactly one run
    assert len(cached) == 2, states
    assert len(list((home / "checkpoints" / "echo").iterdir())) == 2
    # and they met: at each step one run waited for the lock of the other's training
    waited = {p.read_text() for p in meet.glob("waiting.*") if p.suffix != ".tmp"}
    assert len({k for k in waited if k.startswith("train-")}) == 2, waited
    # and neither child imported torch for a torch-free trainer (tasks/checkpoints.py, _train_into)
    assert not list(meet.glob("torch-imported.*"))


def test_bad_config_fails_before_any_training(tmp_path):
    from storage.errors import InputError
    from tasks.config import PipelineConfig

    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"sources": [{"export": str(tmp_path)}], "trainers": {"sft": {"trainig": {}}}}))
    with pytest.raises(InputError, match=r"`trainers.sft.trainig` is not a known field"):
        PipelineConfig.from_yaml(bad).validate_for_run()
    bad.write_text(yaml.safe_dump({"sources": [], "unknown": 1}))
    with pytest.raises(InputError, match=r"`unknown` is not a known field"):
        PipelineConfig.from_yaml(bad)
    bad.write_text(yaml.safe_dump({"max_steps": "many"}))
    with pytest.raises(InputError, match=r"`max_steps` Input should be a valid integer"):
        PipelineConfig.from_yaml(bad)
    bad.write_text(yaml.safe_dump({"sources": [{"export": str(tmp_path / "missing")}]}))
    with pytest.raises(InputError, match=r"sources\[0\].export.*is not a folder"):
        PipelineConfig.from_yaml(bad).validate_for_run()
    bad.write_text(yaml.safe_dump({"trainers": {"sft": {"model": str(tmp_path / "no-model")}}}))
    with pytest.raises(InputError, match="no-model"):
        PipelineConfig.from_yaml(bad).validate_for_run()
    json.dumps(PipelineConfig.model_json_schema())  # the UI form renders from this schema


def test_a_setting_this_machine_cannot_run_fails_before_training(tmp_path):
    import torch

    from storage.errors import InputError
    from tasks.config import PipelineConfig

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    cfg = PipelineConfig(sources=small_sources(tmp_path, 1), trainers={"sft": {"training": {"bf16": True}}})
    with pytest.raises(InputError, match=r"training.bf16"):
        cfg.validate_for_run()


@pytest.fixture(scope="module")
def every_trainer_run(prefect, tmp_path_factory):
    """One 2-step run of every trainer (SFT, retriever, progress) and the test trainer `echo`
    (starts from SFT), registered by one call and placed before SFT in registration order, so
    only its dependency can make SFT train first (the registry is restored right after the
    run). The every-trainer test and the registered-trainer test read it: one SFT curriculum
    instead of two."""
    from flows.curriculum import curriculum
    from tests.echo_trainer import ECHO

    tmp_path = tmp_path_factory.mktemp("every-trainer")
    home = tmp_path / "home"
    trainers = {
        "sft": SFT,
        # One training step each: this test asserts which checkpoint each trainer starts from and
        # what it reports, not what it learns. EWC from step 1's Fisher, estimated on one batch
        # of 4 examples (the default 128 were most of this test's time)
        "retriever": {
            "backbone": "builtin:tiny-encoder",
            "training": {"max_steps": 1},
            "batch_size": 4,
            "ewc_lambda": 10.0,
            "fisher_examples": 4,
        },
        "progress": {"model": "builtin:tiny-encoder", "training": {"max_steps": 1, "per_device_train_batch_size": 8}},
        "echo": {},
    }
    saved = registry.trainers()
    registry.unregister("sft")
    registry.register(ECHO)
    registry.register(saved["sft"])
    try:
        cfg = config(tmp_path, home, n=2)
        result = curriculum(config=cfg.model_validate({**cfg.model_dump(), "trainers": trainers}))
    finally:
        for name in list(registry.trainers()):
            registry.unregister(name)
        for trainer in saved.values():
            registry.register(trainer)
    return home, result


def test_every_trainer_runs_in_the_curriculum_each_from_its_own_previous_checkpoint(every_trainer_run):
    home, result = every_trainer_run
    for name in ("sft", "retriever", "progress"):
        assert train_states(result, name) == ["Completed", "Completed"], name
        first, second = (s["trainers"][name]["checkpoint"] for s in result["steps"])
        assert second["parent_id"] == first["checkpoint_id"], name
    store = Store.open(home)
    rows = catalog.query(
        store,
        "SELECT trainer, step, count(DISTINCT repo_id) AS repos, list(DISTINCT metric) AS metrics"
        " FROM metrics WHERE run_id = $r GROUP BY ALL ORDER BY ALL",
        params={"r": result["run_id"]},
    ).to_pylist()
    by = {(r["trainer"], r["step"]): r for r in rows}
    for name, expected in (("retriever", {"R@1", "R@10", "MRR"}), ("progress", {"MAE", "MSE", "spearman"})):
        assert [by[(name, k)]["repos"] for k in (1, 2)] == [1, 2], name  # every repository seen so far
        assert expected <= set(by[(name, 2)]["metrics"]), by[(name, 2)]
    report = Path(result["report"]).read_text()
    assert "| retriever |" in report and "| progress |" in report and "MRR" in report


def test_a_trainer_registered_by_one_call_trains_after_the_trainer_it_starts_from(every_trainer_run):
    home, result = every_trainer_run  # echo was registered before SFT (every_trainer_run)
    for step in result["steps"]:
        assert set(step["trainers"]) == {"sft", "retriever", "progress", "echo"}
        # the dependency trained first
        assert [n for n in step["trainers"] if n in ("sft", "echo")] == ["sft", "echo"]
        sft, echo = step["trainers"]["sft"]["checkpoint"], step["trainers"]["echo"]["checkpoint"]
        assert echo["parent_id"] == sft["checkpoint_id"]  # SFT's checkpoint of the same step
        assert (Path(echo["path"]) / "started_from.txt").read_text() == sft["path"]
        manifest = json.loads((Path(echo["path"]) / "dojoflow-checkpoint.json").read_text())
        assert manifest["starts_from"] == "sft" and manifest["holds"] == "started_from.txt"
    metrics = catalog.query(Store.open(home), "SELECT DISTINCT step FROM metrics WHERE trainer = 'echo'")
    assert sorted(metrics.column("step").to_pylist()) == [1, 2]


@pytest.fixture
def echo_alone():
    """The test trainer `echo`, starting from its own previous checkpoint (no torch: a fast curriculum)."""
    from tests.echo_trainer import ECHO

    registry.register(dataclasses.replace(ECHO, starts_from=None))
    yield
    registry.unregister("echo")


def test_a_cached_step_whose_checkpoint_folder_was_deleted_trains_again(prefect, tmp_path, echo_alone):
    """As the GRPO flow does: a cached train result pointing at a folder that is gone is not reused."""
    import shutil

    from flows.curriculum import curriculum

    cfg = config(tmp_path, tmp_path / "home", n=2)
    cfg = cfg.model_validate({**cfg.model_dump(), "trainers": {"sft": None, "echo": {}}})
    first = curriculum(config=cfg)
    assert train_states(first, "echo") == ["Completed", "Completed"]
    gone = Path(first["steps"][1]["trainers"]["echo"]["checkpoint"]["path"])
    shutil.rmtree(gone)

    second = curriculum(config=cfg)
    assert train_states(second, "echo") == ["Cached", "Completed"]  # step 1's folder is there: still cached
    assert (gone / "dojoflow-checkpoint.json").is_file() and (gone / "started_from.txt").is_file()
    assert second["checkpoints"] == first["checkpoints"]  # the same content id, published again
    third = curriculum(config=cfg)
    assert train_states(third, "echo") == ["Cached", "Cached"]
