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

from prefect import flow, get_run_logger
from prefect.runtime import flow_run
from prefect.transactions import transaction

from storage.store import Store, dojoflow_home
from tasks import benchmark_overlap, events
from tasks.checkpoints import CheckpointRef, StartingPoints
from tasks.config import PipelineConfig
from tasks.evaluations import EVALUATIONS
from tasks.expert.whole_proof import check_toolchains
from tasks.plan import SourceFailure
from tasks.prefect_tasks import cached_checkpoint_gone, curriculum_tasks
from tasks.prefect_tasks.caching import load_result_storage
from tasks.prefect_tasks.checkpoint_storage import share_checkpoint_task
from tasks.prefect_tasks.events import emit, find_regressions_task
from tasks.run_records import Report, StepResult
from tasks.trainers.registry import get as trainer_def

from . import expert, ui
from .prove import proving_step
from .runtime import crashed
from .step_context import CurriculumStep

# The run of each step evaluation declared in tasks/evaluations.py (signature there): a
# declaration points down only, so the flow registers the flow-level step here.
EVALUATION_RUNS = {"proving": proving_step}


@flow(
    name="curriculum",
    flow_run_name="curriculum[{config.name}]",
    persist_result=False,
    on_failure=[ui.mark_run_failed],
    on_crashed=[ui.mark_run_crashed],
    on_cancellation=[ui.mark_run_cancelled],
)
def curriculum(config: PipelineConfig = PipelineConfig()) -> dict:
    log = get_run_logger()
    home = str(dojoflow_home(config.home))
    trainers = config.validate_for_run()  # bad settings fail here, before any training
    t = curriculum_tasks(home, load_result_storage(config.result_storage))  # a bad block fails here
    run_id = str(flow_run.id or "local")
    t.record_run_start(home, run_id, "curriculum", config.model_dump(mode="json"))
    crashed.mark_crashed_in_prefect(home, t.mark_crashed_runs(home))  # runs killed before this one
    snapshot_settings = t.register_benchmarks(home, config.benchmarks, config.snapshot)  # their fingerprints
    if config.statements:  # statement sets; benchmark sets join the snapshot's benchmarks
        snapshot_settings = t.import_statement_sets(home, config.statements, snapshot_settings, config.splits)
    check_toolchains(Store.open(home), config.expert_iteration)  # a set for another Lean: refused, nothing trained

    # 1. Pin every source to a commit, then ingest it (import an export, or trace a repository)
    ingested, failures = _ingest_sources(t, home, config, log, run_id)

    # 2. Order the repositories (curriculum)
    steps = t.order(home, ingested, config.order, config.max_steps, failures)
    progress = ui.start_progress(config.name, len(steps))

    # 3. Per step: snapshot of repositories 1..k, then train and evaluate every trainer (in
    #    dependency order), each from its own checkpoint of step k-1 or from the checkpoint
    #    of this step it starts from; train and evaluate commit together
    previous: dict[str, CheckpointRef] = expert.starting_points(home, config)  # {} unless continuing rounds
    step_results: list[StepResult] = []
    untried: dict[tuple[str, str], dict] = {}  # theorems the proving evaluation could not try, with the reason
    for step in steps:
        started = time.perf_counter()
        ui.show("snapshot", step.step, len(steps), repo=step.name)
        snapshot = t.snapshot(home, step.seen, snapshot_settings, step=step.step, repo_name=step.name)
        ui.note(benchmark_overlap.overlap_warning(snapshot))  # a benchmark removing most of a split
        at = CurriculumStep(t, home, config, run_id, step, len(steps), snapshot)
        this_step, done = _train_step_trainers(at, trainers, previous, untried)
        previous = {**previous, **this_step}
        _emit_regressions(home, config, run_id, step.step)  # dojoflow.metric.regressed, per regression
        wall = round(time.perf_counter() - started, 2)
        step_results.append(
            StepResult(step=step.step, name=step.name, snapshot=snapshot.snapshot_id, trainers=done, wall_seconds=wall)
        )
        ui.update_progress(progress, config.name, step.step, len(steps))

    # 4. Report, and every metric as one table (once: a card per step would leave stale copies)
    report = _report(t, home, config, run_id, steps, step_results, failures, log)
    return {
        "run_id": run_id,
        "steps": [s.model_dump(mode="json") for s in step_results],  # the flow's result is JSON for the terminal
        "failures": [f.model_dump() for f in failures],
        "report": report.path,
        "checkpoints": {n: c.path for n, c in previous.items()},
        "untried": list(untried.values()),
    }


def _ingest_sources(t, home: str, config: PipelineConfig, log, run_id: str) -> tuple[list, list[SourceFailure]]:
    """Every source pinned and ingested: (what was ingested, the sources that failed and were skipped).
    Each failure emits `dojoflow.trace.failed`."""
    ingested, failures = [], []
    for source in config.sources:
        ui.show(f"ingest {source.label}")
        state = t.pin(source, label=source.label, return_state=True)
        if state.is_completed():
            state = t.ingest(home, state.result(), config.splits, config.tracing, label=source.label, return_state=True)
        if state.is_completed():
            ingested.append(state.result())
            continue
        source_dict = source.model_dump(mode="json")
        emit(events.trace_failed(source.label, source_dict, ui.error_of(state), run_id, config.name))
        if config.continue_on_source_failure:
            failures.append(SourceFailure(source=source.label, error=ui.error_of(state)))
            log.warning("source %s failed and is skipped: %s", source.label, failures[-1].error)
        else:
            state.result()  # raises the source's error
    return ingested, failures


def _train_step_trainers(at: CurriculumStep, trainers: dict, previous: dict, untried: dict) -> tuple[dict, dict]:
    """Train and evaluate every trainer at this step, then its step evaluations; (checkpoints, summaries)."""
    this_step: dict[str, CheckpointRef] = {}
    done = {}
    for name, settings in trainers.items():
        starts = StartingPoints(previous=previous, this_step=this_step)
        trained, evaluated = _train_and_evaluate(at, name, settings, starts)
        at.t.record_metrics(at.home, evaluated.result(), at.run_id, at.step.step, at.step.primary)
        this_step[name] = trained.result()
        emit(
            events.checkpoint_published(
                this_step[name].to_dict(),
                at.home,
                at.step.step,
                at.of,
                at.step.name,
                at.run_id,
                at.config.name,
                trained.name == "Cached",
            )
        )
        if at.t.results is not None and trained.name != "Cached":  # shared beside the cached results
            share_checkpoint_task(at.t.results, this_step[name], at.step.step)
        _step_evaluations(at, this_step[name], untried)
        rounds = None
        ei = at.config.expert_iteration
        if ei is not None and name == ei.trainer:  # expert iteration's rounds (flows/expert.py)
            this_step[name], rounds = expert.expert_rounds(at, this_step[name])
        done[name] = ui.trainer_step_summary(trained, evaluated, rounds)
    return this_step, done


def _train_and_evaluate(at: CurriculumStep, name: str, settings, starts: StartingPoints):
    """Train one trainer and evaluate its checkpoint in one transaction (states, not results)."""
    t, home, step, config = at.t, at.home, at.step, at.config
    at.show("train", name)
    train = t.train
    snapshot = (
        t.trainer_data(home, name, settings, at.snapshot, config.split_kind) if trainer_def(name).data else at.snapshot
    )
    if cached_checkpoint_gone(home, name, settings, snapshot, starts, t.results):
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
        at.show("evaluate", name)
        evaluated = t.evaluate(
            home,
            name,
            settings,
            trained.result(),
            at.snapshot,
            config.split_kind,
            config.evaluation.splits,
            at.eval_repos,
            step=step.step,
            repo_name=step.name,
            return_state=True,
        )
    return trained, evaluated


def _emit_regressions(home: str, config: PipelineConfig, run_id: str, step: int) -> None:
    """`dojoflow.metric.regressed` for each metric of this step on an earlier repository that got
    worse than when learned (tasks/events.py `regressions`; margin `evaluation.regression_margin`)."""
    found = find_regressions_task(home, run_id, step, config.evaluation.regression_margin)
    for regression in found:
        get_run_logger().warning(
            "%s on %s (%s, %s) regressed: %.4g when learned at step %s, %.4g now",
            regression.metric,
            regression.repository,
            regression.trainer,
            regression.split,
            regression.value_when_learned,
            regression.learned_step,
            regression.value,
        )
    emit(*(events.metric_regressed(r, run_id, config.name) for r in found))


def _step_evaluations(at: CurriculumStep, checkpoint: CheckpointRef, untried: dict) -> None:
    """The step evaluations declared in tasks/evaluations.py that apply to `checkpoint`."""
    for evaluation in EVALUATIONS:
        eval_settings = getattr(at.config.evaluation, evaluation.name)
        if eval_settings is not None and evaluation.applies(checkpoint):
            result = EVALUATION_RUNS[evaluation.name](at.context, eval_settings, checkpoint)
            untried.update({(u["repo_id"], u["full_name"]): u for u in result.get("untried", [])})


def _report(t, home: str, config: PipelineConfig, run_id: str, steps, step_results, failures, log) -> Report:
    """The run's report, metrics table and results card; the run recorded as finished."""
    ui.show("report")
    ui.publish_metrics_table(home, config.name, run_id)
    report = t.report(home, config.name, run_id, steps, step_results, failures)
    ui.publish_report(config.name, report)
    t.record_run_end(home, run_id, "partial" if failures else "completed", report.path)
    log.info("report: %s", report.path)
    try:  # the run is complete and recorded: a card that cannot be written is said, and `dojoflow card` redoes it
        log.info("results card: %s", ui.publish_card(home, config.name, run_id))
    except Exception as e:  # noqa: BLE001
        log.error("the results card was not written (%s: %s); run `dojoflow card %s`", type(e).__name__, e, run_id)
    return report
