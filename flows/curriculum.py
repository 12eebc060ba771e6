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
from tasks.config import PipelineConfig
from tasks.prefect_tasks import tasks_for

from . import ui


@flow(name="curriculum", flow_run_name="curriculum[{config.name}]", persist_result=False)
def curriculum(config: PipelineConfig = PipelineConfig()) -> dict:
    log = get_run_logger()
    home = str(dojoflow_home(config.home))
    trainers = config.validate_for_run()  # bad settings fail here, before any training
    t = tasks_for(home)
    run_id = str(flow_run.id or "local")
    ui.record_run_start(home, run_id, "curriculum", config)

    # 1. Ingest every source (import an export, or trace a repository)
    ingested, failures = [], []
    for source in config.sources:
        state = t.ingest(home, source, config.splits, label=source.label, return_state=True)
        if state.is_completed():
            ingested.append(state.result())
        elif config.continue_on_source_failure:
            failures.append({"source": source.label, "error": ui.error_of(state)})
            log.warning("source %s failed and is skipped: %s", source.label, failures[-1]["error"])
        else:
            state.result()  # raises the source's error

    # 2. Order the repositories (curriculum)
    steps = t.order(home, ingested, config.order, config.max_steps)
    progress = ui.start_progress(config.name, len(steps))

    # 3. Per step: snapshot of repositories 1..k, then train and evaluate every trainer
    parents: dict[str, dict] = {}
    step_results = []
    for step in steps:
        k, started = step["step"], time.perf_counter()
        seen = [r for s in steps[:k] for r in s["repo_ids"]]
        snapshot = t.snapshot(home, seen, config.snapshot, step=k, repo_name=step["name"])
        done = {}
        for name, settings in trainers.items():
            eval_repos = seen if config.evaluation.all_repositories_so_far else step["repo_ids"]
            with transaction():
                trained = t.train(home, name, settings, snapshot, config.split_kind, parents.get(name),
                                  step=k, repo_name=step["name"], return_state=True)
                checkpoint = trained.result()
                evaluated = t.evaluate(home, name, settings, checkpoint, snapshot, config.split_kind,
                                       config.evaluation.splits, eval_repos, step=k, repo_name=step["name"],
                                       return_state=True)
                metrics = evaluated.result()
            t.record_metrics(home, metrics, run_id, k, step["primary"])
            parents[name] = checkpoint
            done[name] = {"checkpoint": checkpoint, "seconds": checkpoint["figures"].get("seconds", 0.0),
                          "train_state": trained.name, "evaluate_state": evaluated.name, "metrics": len(metrics)}
        step_results.append({"step": k, "name": step["name"], "snapshot": snapshot["snapshot_id"],
                             "trainers": done, "wall_seconds": round(time.perf_counter() - started, 2)})
        ui.update_progress(progress, k, len(steps))
        ui.publish_metrics_table(home, config.name, [d["checkpoint"]["checkpoint_id"]
                                                     for s in step_results for d in s["trainers"].values()])

    # 4. Report
    report = t.report(home, config.name, run_id, steps, step_results, failures)
    ui.publish_report(config.name, report)
    ui.record_run_end(home, run_id, "failed" if failures else "completed", report["path"])
    log.info("report: %s", report["path"])
    return {"run_id": run_id, "steps": step_results, "failures": failures, "report": report["path"],
            "checkpoints": {n: c["path"] for n, c in parents.items()}}
