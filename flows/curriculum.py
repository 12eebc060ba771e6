"""The curriculum flow: ingest, order, then per step snapshot -> train -> evaluate.

    dojoflow run                      # the shipped sample, tiny models, embedded Prefect
    dojoflow run examples/sample.yaml

Every task is cached by content ids, so a killed run, run again, continues where
it stopped. Train and evaluate of one step commit together: if evaluation fails,
the step's checkpoint is discarded and the step is redone next time. The tasks are in
tasks/prefect_tasks/curriculum.py; the step evaluations are declared in tasks/evaluations.py.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

from prefect import flow, get_run_logger
from prefect.runtime import flow_run
from prefect.transactions import transaction
from pydantic import BaseModel

from storage.snapshot_ref import SnapshotRef
from storage.store import dojoflow_home
from tasks.checkpoints import CheckpointRef, StartingPoints
from tasks.config import PipelineConfig
from tasks.evaluations import EVALUATIONS
from tasks.plan import Step
from tasks.prefect_tasks import CurriculumTasks, cached_checkpoint_gone, curriculum_tasks
from tasks.trainers.base import load_object

from . import ui
from .runtime import crashed


@dataclass(frozen=True)
class _Run:
    """What every step of one curriculum run shares."""

    home: str
    config: PipelineConfig
    run_id: str
    t: CurriculumTasks
    steps: int = 0


@flow(
    name="curriculum",
    flow_run_name="curriculum[{config.name}]",
    persist_result=False,
    on_failure=[ui.mark_run_failed],
    on_crashed=[ui.mark_run_crashed],
    on_cancellation=[ui.mark_run_cancelled],
)
def curriculum(config: PipelineConfig = PipelineConfig()) -> dict:
    home = str(dojoflow_home(config.home))
    trainers = config.validate_for_run()  # bad settings fail here, before any training
    run = _Run(home, config, str(flow_run.id or "local"), curriculum_tasks(home))
    t = run.t
    t.record_run_start(home, run.run_id, "curriculum", config.model_dump(mode="json"))
    crashed.mark_crashed_in_prefect(home, t.mark_crashed_runs(home))  # runs killed before this one
    snapshot_settings = t.register_benchmarks(home, config.benchmarks, config.snapshot)  # their fingerprints

    # 1. Pin every source to a commit, then ingest it (import an export, or trace a repository)
    ingested, failures = _ingest_sources(run)

    # 2. Order the repositories (curriculum)
    steps = t.order(home, ingested, config.order, config.max_steps, failures)
    run = replace(run, steps=len(steps))
    progress = ui.start_progress(config.name, len(steps))

    # 3. Per step: snapshot of repositories 1..k, then train and evaluate every trainer (in
    #    dependency order), each from its own checkpoint of step k-1 or from the checkpoint
    #    of this step it starts from
    previous: dict[str, CheckpointRef] = {}
    step_results = []
    untried: dict[tuple[str, str], dict] = {}  # theorems the proving evaluation could not try, with the reason
    for step in steps:
        started = time.perf_counter()
        ui.show("snapshot", step.step, len(steps), repo=step.name)
        snapshot = t.snapshot(home, step.seen, snapshot_settings, step=step.step, repo_name=step.name)
        this_step: dict[str, CheckpointRef] = {}
        done = {}
        for name, settings in trainers.items():
            starts = StartingPoints(previous=previous, this_step=this_step)
            trained, evaluated = _train_and_evaluate(run, step, name, settings, snapshot, starts)
            this_step[name] = trained.result()
            untried.update(_step_evaluations(run, step, this_step[name]))
            done[name] = ui.trainer_step_summary(trained, evaluated)
        previous = {**previous, **this_step}
        wall = round(time.perf_counter() - started, 2)
        step_results.append(
            {
                "step": step.step,
                "name": step.name,
                "snapshot": snapshot.snapshot_id,
                "trainers": done,
                "wall_seconds": wall,
            }
        )
        ui.update_progress(progress, config.name, step.step, len(steps))

    # 4. Report, and every metric as one table
    report = _report(run, steps, step_results, failures)
    return {
        "run_id": run.run_id,
        "steps": step_results,
        "failures": failures,
        "report": report["path"],
        "checkpoints": {n: c.path for n, c in previous.items()},
        "untried": list(untried.values()),
    }


def _ingest_sources(run: _Run) -> tuple[list[dict], list[dict]]:
    """(what each source ingested, the sources that failed and were skipped); a failing source
    fails the run unless `continue_on_source_failure`."""
    ingested, failures = [], []
    config, t = run.config, run.t
    for source in config.sources:
        ui.show(f"ingest {source.label}")
        state = t.pin(source, label=source.label, return_state=True)
        if state.is_completed():
            state = t.ingest(
                run.home, state.result(), config.splits, config.tracing, label=source.label, return_state=True
            )
        if state.is_completed():
            ingested.append(state.result())
        elif config.continue_on_source_failure:
            failures.append({"source": source.label, "error": ui.error_of(state)})
            get_run_logger().warning("source %s failed and is skipped: %s", source.label, failures[-1]["error"])
        else:
            state.result()  # raises the source's error
    return ingested, failures


def _train_and_evaluate(run: _Run, step: Step, name: str, settings: BaseModel, snapshot: SnapshotRef, starts):
    """One trainer at one step: train, then evaluate, committed together (an evaluation that
    fails discards the checkpoint); a cached step whose checkpoint folder is gone trains again.
    Returns the two task states, with their metrics recorded."""
    home, config, t = run.home, run.config, run.t
    ui.show("train", step.step, run.steps, name, step.name)
    train = t.train
    if cached_checkpoint_gone(home, name, settings, snapshot, starts):
        get_run_logger().warning("the checkpoint of %s at step %s is gone: training it again", name, step.step)
        train = train.with_options(refresh_cache=True)
    with transaction():
        trained = train(
            home,
            name,
            settings,
            snapshot,
            config.split_kind,
            starts,
            step=step.step,
            repo_name=step.name,
            return_state=True,
        )
        ui.show("evaluate", step.step, run.steps, name, step.name)
        evaluated = t.evaluate(
            home,
            name,
            settings,
            trained.result(),
            snapshot,
            config.split_kind,
            config.evaluation.splits,
            _eval_repos(config, step),
            step=step.step,
            repo_name=step.name,
            return_state=True,
        )
    t.record_metrics(home, evaluated.result(), run.run_id, step.step, step.primary)
    return trained, evaluated


def _eval_repos(config: PipelineConfig, step: Step) -> list[str]:
    return step.seen if config.evaluation.all_repositories_so_far else step.repo_ids


def _step_evaluations(run: _Run, step: Step, checkpoint: CheckpointRef) -> dict[tuple[str, str], dict]:
    """The step evaluations declared in tasks/evaluations.py that apply to `checkpoint`; the
    theorems they could not try, by (repo id, full name)."""
    untried = {}
    for evaluation in EVALUATIONS:
        eval_settings = getattr(run.config.evaluation, evaluation.name)
        if eval_settings is not None and evaluation.applies(checkpoint):
            result = load_object(evaluation.run)(
                run.home,
                eval_settings,
                checkpoint,
                _eval_repos(run.config, step),
                run.config.split_kind,
                run.run_id,
                step.step,
                step.primary,
            )
            untried.update({(u["repo_id"], u["full_name"]): u for u in result.get("untried", [])})
    return untried


def _report(run: _Run, steps: list[Step], step_results: list[dict], failures: list[dict]) -> dict:
    """The report and every metric as one table (once: a card per step would leave stale
    copies), the run's end in the catalog, then the results card."""
    home, name, run_id, log = run.home, run.config.name, run.run_id, get_run_logger()
    ui.show("report")
    ui.publish_metrics_table(home, name, run_id)
    report = run.t.report(home, name, run_id, [s.model_dump() for s in steps], step_results, failures)
    ui.publish_report(name, report)
    run.t.record_run_end(home, run_id, "partial" if failures else "completed", report["path"])
    log.info("report: %s", report["path"])
    try:  # the run is complete and recorded: a card that cannot be written is said, and `dojoflow card` redoes it
        log.info("results card: %s", ui.publish_card(home, name, run_id))
    except Exception as e:  # noqa: BLE001
        log.error("the results card was not written (%s: %s); run `dojoflow card %s`", type(e).__name__, e, run_id)
    return report
