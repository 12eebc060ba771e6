"""The curriculum flow's tasks (flows/curriculum.py): pin, ingest, snapshot, train, evaluate,
order, record and report, each a name, retries and a cache key around one plain function
of tasks/ or storage/. `curriculum_tasks(home)` gives them configured for one home.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.tasks import Task
from prefect.transactions import get_transaction
from pydantic import BaseModel, JsonValue

from storage.ids import stable_hash
from storage.snapshot import SnapshotSettings, build_snapshot, snapshot_id
from storage.snapshot_ref import SnapshotRef
from storage.splits import SplitSettings
from storage.statement_sets.reader import StatementSetConfig

from .. import checkpoints, evaluation, ingest, limits, plan, report, runs
from ..benchmarks import BenchmarkConfig, register_benchmarks
from ..config import SourceConfig, TracingConfig
from ..ingest import Ingested
from ..plan import SourceFailure
from ..run_records import MetricRow, Report, StepResult
from .caching import cached_result_exists, cached_under, store_of, transient
from .checkpoint_storage import fetch_checkpoint
from .limits import holding


# -- cache keys: content ids only ----------------------------------------------------
def _ingest_key(ctx, p) -> str:
    store = store_of(p["home"])
    what = {
        "splits": p["split_settings"].model_dump(),
        "build_deps": p["tracing"].build_deps,
    }  # parallelism is not content
    return f"ingest-{store.instance_id}-{ingest.source_fingerprint(p['source'])}-{stable_hash(what, 8)}"


def _snapshot_key(ctx, p) -> str:
    store = store_of(p["home"])
    return f"snapshot-{store.instance_id}-{snapshot_id(store, p['repo_ids'], p['settings'])}"


def _train_key(ctx, p) -> str:
    cid = checkpoints.checkpoint_id(p["trainer"], p["settings"], p["snapshot"].snapshot_id, p["starts"])
    return f"train-{store_of(p['home']).instance_id}-{p['trainer']}-{cid}"


def _evaluate_key(ctx, p) -> str:
    what = {
        "splits": p["splits"],
        "repos": sorted(p["repo_ids"]),
        "kind": p["split_kind"],
        "settings": checkpoints.settings_hash(p["settings"]),
    }  # evaluation settings are not in the checkpoint id
    return f"evaluate-{store_of(p['home']).instance_id}-{p['checkpoint'].checkpoint_id}-{stable_hash(what, 12)}"


# -- the tasks ------------------------------------------------------------------------
@task(
    name="pin-source",
    task_run_name="pin-source[{label}]",
    cache_policy=NO_CACHE,  # asks git afresh each run
    retries=2,
    retry_delay_seconds=10,
    retry_condition_fn=transient,
)
def pin_task(source: SourceConfig, label: str) -> SourceConfig:
    return ingest.pin_source(source)


@task(name="ingest", task_run_name="ingest[{label}]", retries=2, retry_delay_seconds=10, retry_condition_fn=transient)
def ingest_task(
    home: str, source: SourceConfig, split_settings: SplitSettings, tracing: TracingConfig, label: str
) -> Ingested:
    with holding(limits.TRACE, limits.trace_slots()):
        return ingest.ingest_source(store_of(home), source, split_settings, Path(home), tracing)


@task(name="build-snapshot", task_run_name="build-snapshot[step {step}: {repo_name}]")
def snapshot_task(home: str, repo_ids: list[str], settings: SnapshotSettings, step: int, repo_name: str) -> SnapshotRef:
    return build_snapshot(store_of(home), repo_ids, settings)


@task(name="train", task_run_name="train-{trainer}[step {step}: {repo_name}]")
def train_task(
    home: str,
    trainer: str,
    settings: BaseModel,
    snapshot: SnapshotRef,
    split_kind: str,
    starts: checkpoints.StartingPoints,
    step: int,
    repo_name: str,
) -> checkpoints.CheckpointRef:
    with holding(limits.GPU, limits.gpu_slots(settings)):
        ref = checkpoints.train_step(Path(home), store_of(home), trainer, settings, snapshot, split_kind, starts)
    txn = get_transaction()
    if txn is not None:
        txn.set("checkpoint", ref.to_dict())
        txn.set("home", home)
    return ref


@train_task.on_rollback
def _discard_rolled_back_checkpoint(txn) -> None:
    ref = txn.get("checkpoint", None)
    if ref is not None:
        checkpoints.discard_checkpoint(store_of(txn.get("home")), checkpoints.CheckpointRef.from_dict(ref))


@task(name="evaluate", task_run_name="evaluate-{trainer}[step {step}: {repo_name}]")
def evaluate_task(
    home: str,
    trainer: str,
    settings: BaseModel,
    checkpoint: checkpoints.CheckpointRef,
    snapshot: SnapshotRef,
    split_kind: str,
    splits: list[str],
    repo_ids: list[str],
    step: int,
    repo_name: str,
) -> list[MetricRow]:
    return evaluation.evaluate_step(Path(home), trainer, settings, checkpoint, snapshot, split_kind, splits, repo_ids)


@task(name="order-repositories", task_run_name="order-repositories")
def order_task(
    home: str, ingested: list[Ingested], order: str, max_steps: int | None, failures: list[SourceFailure]
) -> list[plan.Step]:
    return plan.plan_steps(store_of(home), ingested, order, max_steps, failures)


@task(name="record-metrics", task_run_name="record-metrics[step {step}]")
def record_metrics_task(home: str, rows: list[MetricRow], run_id: str, step: int, step_repo_id: str) -> int:
    """Record `rows` (a cached evaluation of an earlier version gives dicts: `MetricRow.of` reads them)."""
    return evaluation.record_metrics(store_of(home), rows, run_id, step, step_repo_id)


@task(name="record-run-start", task_run_name="record-run-start")
def record_run_start_task(home: str, run_id: str, flow: str, config: dict[str, JsonValue]) -> None:
    """The run's start, with its config as JSON (the runs table keeps the document as given)."""
    runs.record_run_start(store_of(home), run_id, flow, config)


@task(name="mark-crashed-runs", task_run_name="mark-crashed-runs")
def mark_crashed_runs_task(home: str) -> list[str]:
    return runs.mark_crashed_runs(store_of(home))


@task(name="record-run-end", task_run_name="record-run-end[{status}]")
def record_run_end_task(home: str, run_id: str, status: str, report_path: str | None) -> None:
    runs.record_run_end(store_of(home), run_id, status, report_path)


@task(name="write-report", task_run_name="write-report[{name}]")
def report_task(
    home: str,
    name: str,
    run_id: str,
    steps: list[plan.Step],
    step_results: list[StepResult],
    failures: list[SourceFailure],
) -> Report:
    """The run's report (tasks/report.py `write_report`)."""
    return report.write_report(store_of(home), Path(home), name, run_id, steps, step_results, failures)


@task(
    name="register-benchmarks", task_run_name="register-benchmarks", cache_policy=NO_CACHE
)  # no hash suffix in the UI
def register_benchmarks_task(
    home: str, benchmarks: list[BenchmarkConfig], snapshot_settings: SnapshotSettings
) -> SnapshotSettings:
    """Store the pipeline's benchmarks and name their fingerprints in the snapshot settings."""
    return register_benchmarks(store_of(home), list(benchmarks), snapshot_settings)


@task(name="import-statement-sets", task_run_name="import-statement-sets", cache_policy=NO_CACHE)
def import_statement_sets_task(
    home: str, configs: list[StatementSetConfig], snapshot_settings: SnapshotSettings, splits: SplitSettings
) -> SnapshotSettings:
    """Import the pipeline's statement sets; benchmark sets join the snapshot settings' benchmarks."""
    from ..statement_sets import import_statement_sets

    settings, rows = import_statement_sets(store_of(home), list(configs), snapshot_settings, splits)
    for r in rows:
        get_run_logger().info("statement set %s: %s, %s statements", r["set"], r["status"], r["statements"])
    return settings


@task(name="trainer-data", task_run_name="trainer-data[{trainer}]", cache_policy=NO_CACHE)
def trainer_data_task(
    home: str, trainer: str, settings: BaseModel, snapshot: SnapshotRef, split_kind: str
) -> SnapshotRef:
    """The snapshot `trainer` trains on at a step: its declaration's `data` function (the step's
    snapshot plus what it adds from the store), or the step's snapshot."""
    from ..trainers.base import load_object
    from ..trainers.registry import get

    ref = get(trainer).data
    return load_object(ref)(store_of(home), settings, snapshot, split_kind) if ref else snapshot


@dataclass(frozen=True)
class CurriculumTasks:
    """The curriculum flow's tasks, configured for one Dojoflow home (`curriculum_tasks`)."""

    register_benchmarks: Task
    pin: Task
    ingest: Task
    snapshot: Task
    train: Task
    evaluate: Task
    record_metrics: Task
    order: Task
    record_run_start: Task
    mark_crashed_runs: Task
    record_run_end: Task
    report: Task
    import_statement_sets: Task = import_statement_sets_task
    results: object = None  # the storage block cached results live on (None: under the home)
    trainer_data: Task = trainer_data_task


def cached_checkpoint_gone(
    home: str,
    trainer: str,
    settings: BaseModel,
    snapshot: SnapshotRef,
    starts: checkpoints.StartingPoints,
    results=None,
) -> bool:
    """Whether the train task has a cached result whose checkpoint folder is gone (deleted by
    hand, or a store copied without it) and cannot be fetched from the result storage block
    `results`: that result must not be reused, the step trains again (call the task with
    `refresh_cache=True`). A step that was never cached, or is
    being trained by another run right now, is left to the cache and its lock, so two runs
    still train it once."""
    plan = checkpoints.plan_step(trainer, settings, snapshot.snapshot_id, starts)
    if checkpoints.load_published(Path(home), trainer, plan.checkpoint_id) is not None:
        return False
    if results is not None and fetch_checkpoint(results, home, trainer, plan.checkpoint_id) is not None:
        return False
    params = {"home": home, "trainer": trainer, "settings": settings, "snapshot": snapshot, "starts": starts}
    return cached_result_exists(home, _train_key(None, params), results)


def curriculum_tasks(home: Path, results=None) -> CurriculumTasks:
    """The tasks with cache keys, result storage and locks under `home`; results and cache
    records on the storage block `results` if given (`caching.load_result_storage`)."""
    cached = cached_under(home, results)
    return CurriculumTasks(
        register_benchmarks=register_benchmarks_task,
        pin=pin_task,
        ingest=cached(ingest_task, _ingest_key),
        snapshot=cached(snapshot_task, _snapshot_key),
        train=cached(train_task, _train_key),
        evaluate=cached(evaluate_task, _evaluate_key),
        record_metrics=record_metrics_task,
        order=order_task,
        record_run_start=record_run_start_task,
        record_run_end=record_run_end_task,
        mark_crashed_runs=mark_crashed_runs_task,
        report=report_task,
        results=results,
    )
