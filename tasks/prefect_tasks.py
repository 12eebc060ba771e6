"""Prefect task wrappers: each sets a name, retries and a cache key around one plain
function. This and `flows/` are the only modules that import Prefect.

Cache keys come from content ids (source fingerprint, snapshot id, checkpoint id),
never from run ids or paths, so a new run reuses every finished step. Records are
JSON manifests under `<home>/prefect/results`; SERIALIZABLE isolation with a file
lock manager (flock: released when a killed holder dies) makes two runs on one
store compute each key once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE, CacheKeyFnPolicy
from prefect.tasks import Task
from prefect.transactions import get_transaction

from storage.ids import stable_hash
from storage.snapshot import SnapshotSettings, build_snapshot, snapshot_id
from storage.snapshot_ref import SnapshotRef
from storage.store import Store

from . import checkpoints, evaluation, ingest, plan, report, runs, watch
from .prefect_locking import FlockLockManager


def _store(home: str) -> Store:
    return Store.open(home)


# -- cache keys: content ids only ----------------------------------------------------
def _ingest_key(ctx, p) -> str:
    store = _store(p["home"])
    what = {
        "splits": p["split_settings"].model_dump(),
        "build_deps": p["tracing"].build_deps,
    }  # parallelism is not content
    return f"ingest-{store.instance_id}-{ingest.source_fingerprint(p['source'])}-{stable_hash(what, 8)}"


def _snapshot_key(ctx, p) -> str:
    store = _store(p["home"])
    return f"snapshot-{store.instance_id}-{snapshot_id(store, p['repo_ids'], p['settings'])}"


def _train_key(ctx, p) -> str:
    cid = checkpoints.checkpoint_id(p["trainer"], p["settings"], p["snapshot"].snapshot_id, p["starts"])
    return f"train-{_store(p['home']).instance_id}-{p['trainer']}-{cid}"


def _evaluate_key(ctx, p) -> str:
    what = {
        "splits": p["splits"],
        "repos": sorted(p["repo_ids"]),
        "kind": p["split_kind"],
        "settings": checkpoints.settings_hash(p["settings"]),
    }  # evaluation settings are not in the checkpoint id
    return f"evaluate-{_store(p['home']).instance_id}-{p['checkpoint'].checkpoint_id}-{stable_hash(what, 12)}"


# -- the tasks ------------------------------------------------------------------------
def _transient(task, task_run, state) -> bool:
    """Retry only errors that say a retry can help (storage/errors.py)."""
    try:
        state.result()
    except Exception as e:  # noqa: BLE001
        return bool(getattr(e, "transient", False))
    return False


@task(
    name="pin-source",
    task_run_name="pin-source[{label}]",
    cache_policy=NO_CACHE,  # asks git afresh each run
    retries=2,
    retry_delay_seconds=10,
    retry_condition_fn=_transient,
)
def pin_task(source, label: str):
    return ingest.pin_source(source)


@task(name="ingest", task_run_name="ingest[{label}]", retries=2, retry_delay_seconds=10, retry_condition_fn=_transient)
def ingest_task(home: str, source, split_settings, tracing, label: str) -> dict:
    return ingest.ingest_source(_store(home), source, split_settings, Path(home), tracing)


@task(name="build-snapshot", task_run_name="build-snapshot[step {step}: {repo_name}]")
def snapshot_task(home: str, repo_ids: list[str], settings: SnapshotSettings, step: int, repo_name: str) -> SnapshotRef:
    return build_snapshot(_store(home), repo_ids, settings)


@task(name="train", task_run_name="train-{trainer}[step {step}: {repo_name}]")
def train_task(
    home: str,
    trainer: str,
    settings,
    snapshot: SnapshotRef,
    split_kind: str,
    starts: checkpoints.StartingPoints,
    step: int,
    repo_name: str,
) -> checkpoints.CheckpointRef:
    ref = checkpoints.train_step(Path(home), _store(home), trainer, settings, snapshot, split_kind, starts)
    txn = get_transaction()
    if txn is not None:
        txn.set("checkpoint", ref.to_dict())
        txn.set("home", home)
    return ref


@train_task.on_rollback
def _discard_rolled_back_checkpoint(txn) -> None:
    ref = txn.get("checkpoint", None)
    if ref is not None:
        checkpoints.discard_checkpoint(_store(txn.get("home")), checkpoints.CheckpointRef.from_dict(ref))


@task(name="evaluate", task_run_name="evaluate-{trainer}[step {step}: {repo_name}]")
def evaluate_task(
    home: str,
    trainer: str,
    settings,
    checkpoint: checkpoints.CheckpointRef,
    snapshot: SnapshotRef,
    split_kind: str,
    splits: list[str],
    repo_ids: list[str],
    step: int,
    repo_name: str,
) -> list[dict]:
    return evaluation.evaluate_step(Path(home), trainer, settings, checkpoint, snapshot, split_kind, splits, repo_ids)


@task(name="order-repositories", task_run_name="order-repositories")
def order_task(
    home: str, ingested: list[dict], order: str, max_steps: int | None, failures: list[dict]
) -> list[plan.Step]:
    return plan.plan_steps(_store(home), ingested, order, max_steps, failures)


@task(name="record-metrics", task_run_name="record-metrics[step {step}]")
def record_metrics_task(home: str, rows: list[dict], run_id: str, step: int, step_repo_id: str) -> int:
    return evaluation.record_metrics(_store(home), rows, run_id, step, step_repo_id)


@task(name="record-run-start", task_run_name="record-run-start")
def record_run_start_task(home: str, run_id: str, flow: str, config: dict) -> None:
    runs.record_run_start(_store(home), run_id, flow, config)


@task(name="mark-crashed-runs", task_run_name="mark-crashed-runs")
def mark_crashed_runs_task(home: str) -> list[str]:
    return runs.mark_crashed_runs(_store(home))


@task(name="record-run-end", task_run_name="record-run-end[{status}]")
def record_run_end_task(home: str, run_id: str, status: str, report_path: str | None) -> None:
    runs.record_run_end(_store(home), run_id, status, report_path)


@task(name="write-report", task_run_name="write-report[{name}]")
def report_task(
    home: str, name: str, run_id: str, steps: list[dict], step_results: list[dict], failures: list[dict]
) -> dict:
    return report.write_report(_store(home), Path(home), name, run_id, steps, step_results, failures)


@dataclass(frozen=True)
class CurriculumTasks:
    """The curriculum flow's tasks, configured for one Dojoflow home (`tasks_for`)."""

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


def _cache_keys(home: Path) -> Path:
    return Path(home) / "prefect" / "cache-keys"  # must differ from the results, or records overwrite them


def cached_under(home: Path) -> Callable[[Task, Callable], Task]:
    """`cached(task, key_fn)`: `task` with its results cached as JSON under `home`, keyed by
    `key_fn`, one run at a time per key (file locks under `home`)."""
    home = Path(home)
    storage = home / "prefect" / "results"
    keys = _cache_keys(home)
    locks = FlockLockManager(home / "prefect" / "locks")

    def cached(t: Task, key_fn: Callable) -> Task:
        policy = CacheKeyFnPolicy(cache_key_fn=key_fn).configure(
            key_storage=keys, lock_manager=locks, isolation_level="SERIALIZABLE"
        )
        return t.with_options(
            cache_policy=policy, result_storage=storage, result_serializer="json", persist_result=True
        )

    return cached


def cached_checkpoint_gone(home: str, trainer: str, settings, snapshot: SnapshotRef, starts) -> bool:
    """Whether the train task has a cached result whose checkpoint folder is gone (deleted by
    hand, or a store copied without it): that result must not be reused, the step trains
    again (call the task with `refresh_cache=True`). A step that was never cached, or is
    being trained by another run right now, is left to the cache and its lock, so two runs
    still train it once."""
    from prefect.filesystems import LocalFileSystem
    from prefect.results import ResultStore

    plan = checkpoints.plan_step(trainer, settings, snapshot.snapshot_id, starts)
    if checkpoints.load_published(Path(home), trainer, plan.checkpoint_id) is not None:
        return False
    params = {"home": home, "trainer": trainer, "settings": settings, "snapshot": snapshot, "starts": starts}
    records = ResultStore(metadata_storage=LocalFileSystem(basepath=str(_cache_keys(Path(home)))))
    return records.exists(_train_key(None, params))


def tasks_for(home: Path) -> CurriculumTasks:
    """The tasks with cache keys, result storage and locks under `home`."""
    cached = cached_under(home)
    return CurriculumTasks(
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
    )


# -- nightly ---------------------------------------------------------------------------
# The nightly flow's tasks (flows/nightly.py); their logic is in tasks/watch/. None is
# cached: every night asks git afresh and reads the state file as it is now.


@task(
    name="check-repository",
    task_run_name="check[{repo.label}]",
    cache_policy=NO_CACHE,
    retries=2,
    retry_delay_seconds=30,
    retry_condition_fn=_transient,
)
def check_repository_task(repo: watch.WatchedRepo) -> str:
    return watch.latest_commit(repo)


@task(name="load-nightly-state", task_run_name="load-nightly-state", cache_policy=NO_CACHE)
def load_nightly_state_task(home: str) -> watch.NightlyState:
    return watch.load_state(home)


@task(name="record-nightly-state", task_run_name="record-nightly-state[{run_id}]", cache_policy=NO_CACHE)
def record_nightly_state_task(home: str, processed: list[tuple[watch.WatchedRepo, str]], run_id: str) -> int:
    watch.record_processed(home, processed, run_id)
    return len(processed)


# -- expert iteration ------------------------------------------------------------------
# The rounds inside a curriculum step (flows/expert.py); the logic is in tasks/expert/. A batch's
# search is cached like the proving evaluation's (store, searching checkpoint, the batch's
# theorems, the settings), so a killed round resumes with the batches already searched kept.
def _expert_search_key(ctx, p) -> str:
    from .proving.evaluate import RECORD_VERSION

    what = {
        "theorems": [t["theorem_id"] for t in p["theorems"]],
        "settings": p["search"].model_dump(mode="json"),
        "records": RECORD_VERSION,
    }
    return f"expert-search-{_store(p['home']).instance_id}-{p['checkpoint']['checkpoint_id']}-{stable_hash(what, 16)}"


@task(name="expert-pool", task_run_name="expert-pool[step {step} round {round}]", cache_policy=NO_CACHE)
def expert_pool_task(home: str, repo_ids: list[str], split_kind: str, settings, search, step: int, round: int) -> dict:
    from .expert import steps

    return steps.select(_store(home), repo_ids, split_kind, settings, search, step, round)


@task(name="expert-search", task_run_name="expert-search[step {step} round {round} batch {batch}]")
def expert_search_task(
    home: str, search, checkpoint: dict, theorems: list[dict], step: int, round: int, batch: int
) -> list[dict]:
    from .expert import steps

    return steps.search(_store(home), search, checkpoint, theorems, home)


@task(name="expert-store-found", task_run_name="expert-store-found[step {step} round {round}]", cache_policy=NO_CACHE)
def expert_store_task(
    home: str, records: list[dict], search, run_id: str, step: int, round: int, checkpoint_id: str
) -> int:
    from .expert import steps

    return steps.store_found(_store(home), records, search, run_id, step, round, checkpoint_id)


@task(name="expert-data", task_run_name="expert-data[step {step} round {round}]", cache_policy=NO_CACHE)
def expert_data_task(
    home: str, snapshot: SnapshotRef, split_kind: str, ratio: float, repo_ids: list[str], step: int, round: int
) -> tuple[dict, dict]:
    from .expert import steps

    return steps.training_data(_store(home), snapshot, split_kind, ratio, repo_ids, step, round)


@task(name="expert-continue-from", task_run_name="expert-continue-from[{trainer}]", cache_policy=NO_CACHE)
def expert_continue_task(home: str, trainer: str) -> dict | None:
    from .expert import steps

    return steps.last_round_checkpoint(_store(home), home, trainer)


def expert_tasks(home: str) -> dict[str, Task]:
    """Expert iteration's tasks, the batch search cached under `home` like the curriculum's."""
    return {
        "pool": expert_pool_task,
        "search": cached_under(Path(home))(expert_search_task, _expert_search_key),
        "store_found": expert_store_task,
        "data": expert_data_task,
        "continue_from": expert_continue_task,
    }
