"""The curriculum flow: ingest, order, then per step snapshot -> train -> evaluate.

    dojoflow run                      # the shipped sample, tiny models, embedded Prefect
    dojoflow run examples/sample.yaml

Every task is cached by content ids, so a killed run, run again, continues where
it stopped. Train and evaluate of one step commit together: if evaluation fails,
the step's checkpoint is discarded and the step is redone next time.
"""

from __future__ import annotations

import time

from prefect import flow, get_run_logger
from prefect.runtime import flow_run
from prefect.transactions import transaction

from storage.store import dojoflow_home
from tasks.checkpoints import CheckpointRef, StartingPoints
from tasks.config import PipelineConfig
from tasks.evaluations import EVALUATIONS
from tasks.prefect_tasks import cached_checkpoint_gone, curriculum_tasks
from tasks.trainers.base import load_object

from . import expert, ui
from .runtime import crashed


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
    t = curriculum_tasks(home)
    run_id = str(flow_run.id or "local")
    t.record_run_start(home, run_id, "curriculum", config.model_dump(mode="json"))
    crashed.mark_crashed_in_prefect(home, t.mark_crashed_runs(home))  # runs killed before this one
    snapshot_settings = t.register_benchmarks(home, config.benchmarks, config.snapshot)  # their fingerprints

    # 1. Pin every source to a commit, then ingest it (import an export, or trace a repository)
    ingested, failures = [], []
    for source in config.sources:
        ui.show(f"ingest {source.label}")
        state = t.pin(source, label=source.label, return_state=True)
        if state.is_completed():
            state = t.ingest(home, state.result(), config.splits, config.tracing, label=source.label, return_state=True)
        if state.is_completed():
            ingested.append(state.result())
        elif config.continue_on_source_failure:
            failures.append({"source": source.label, "error": ui.error_of(state)})
            log.warning("source %s failed and is skipped: %s", source.label, failures[-1]["error"])
        else:
            state.result()  # raises the source's error

    # 2. Order the repositories (curriculum)
    steps = t.order(home, ingested, config.order, config.max_steps, failures)
    progress = ui.start_progress(config.name, len(steps))

    # 3. Per step: snapshot of repositories 1..k, then train and evaluate every trainer (in
    #    dependency order), each from its own checkpoint of step k-1 or from the checkpoint
    #    of this step it starts from; train and evaluate commit together
    previous: dict[str, CheckpointRef] = expert.starting_points(home, config)  # {} unless continuing rounds
    step_results = []
    untried: dict[tuple[str, str], dict] = {}  # theorems the proving evaluation could not try, with the reason
    for step in steps:
        started = time.perf_counter()
        ui.show("snapshot", step.step, len(steps), repo=step.name)
        snapshot = t.snapshot(home, step.seen, snapshot_settings, step=step.step, repo_name=step.name)
        eval_repos = step.seen if config.evaluation.all_repositories_so_far else step.repo_ids
        this_step: dict[str, CheckpointRef] = {}
        done = {}
        for name, settings in trainers.items():
            starts = StartingPoints(previous=previous, this_step=this_step)
            ui.show("train", step.step, len(steps), name, step.name)
            train = t.train
            if cached_checkpoint_gone(home, name, settings, snapshot, starts):
                log.warning("the checkpoint of %s at step %s is gone: training it again", name, step.step)
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
                ui.show("evaluate", step.step, len(steps), name, step.name)
                evaluated = t.evaluate(
                    home,
                    name,
                    settings,
                    trained.result(),
                    snapshot,
                    config.split_kind,
                    config.evaluation.splits,
                    eval_repos,
                    step=step.step,
                    repo_name=step.name,
                    return_state=True,
                )
            t.record_metrics(home, evaluated.result(), run_id, step.step, step.primary)
            this_step[name] = trained.result()
            for evaluation in EVALUATIONS:  # the step evaluations declared in tasks/evaluations.py
                eval_settings = getattr(config.evaluation, evaluation.name)
                if eval_settings is not None and evaluation.applies(this_step[name]):
                    result = load_object(evaluation.run)(
                        home,
                        eval_settings,
                        this_step[name].to_dict(),
                        eval_repos,
                        config.split_kind,
                        run_id,
                        step.step,
                        step.primary,
                    )
                    untried.update({(u["repo_id"], u["full_name"]): u for u in result.get("untried", [])})
            done[name] = ui.trainer_step_summary(trained, evaluated)
            if config.expert_iteration is not None and name == config.expert_iteration.trainer:  # rounds
                this_step[name], done[name]["expert_rounds"] = expert.expert_rounds(
                    t, home, config, step, len(steps), snapshot, this_step[name], run_id
                )
        previous = {**previous, **this_step}
        step_results.append(
            {
                "step": step.step,
                "name": step.name,
                "snapshot": snapshot.snapshot_id,
                "trainers": done,
                "wall_seconds": round(time.perf_counter() - started, 2),
            }
        )
        ui.update_progress(progress, config.name, step.step, len(steps))

    # 4. Report, and every metric as one table (once: a card per step would leave stale copies)
    ui.show("report")
    ui.publish_metrics_table(home, config.name, run_id)
    report = t.report(home, config.name, run_id, [s.model_dump() for s in steps], step_results, failures)
    ui.publish_report(config.name, report)
    t.record_run_end(home, run_id, "partial" if failures else "completed", report["path"])
    log.info("report: %s", report["path"])
    try:  # the run is complete and recorded: a card that cannot be written is said, and `dojoflow card` redoes it
        log.info("results card: %s", ui.publish_card(home, config.name, run_id))
    except Exception as e:  # noqa: BLE001
        log.error("the results card was not written (%s: %s); run `dojoflow card %s`", type(e).__name__, e, run_id)
    return {
        "run_id": run_id,
        "steps": step_results,
        "failures": failures,
        "report": report["path"],
        "checkpoints": {n: c.path for n, c in previous.items()},
        "untried": list(untried.values()),
    }
