"""The nightly flow's tasks (flows/nightly.py); their logic is in tasks/watch/. None is
cached: every night asks git afresh and reads the state file as it is now."""

from __future__ import annotations

from dataclasses import dataclass

from prefect import task
from prefect.cache_policies import NO_CACHE
from prefect.tasks import Task

from .. import watch
from .caching import transient


@task(
    name="check-repository",
    task_run_name="check[{repo.label}]",
    cache_policy=NO_CACHE,
    retries=2,
    retry_delay_seconds=30,
    retry_condition_fn=transient,
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


@dataclass(frozen=True)
class NightlyTasks:
    """The nightly flow's tasks (`nightly_tasks`)."""

    check_repository: Task
    load_state: Task
    record_state: Task


def nightly_tasks(home: str) -> NightlyTasks:
    """The nightly tasks for `home` (none is cached, so none depends on it)."""
    return NightlyTasks(
        check_repository=check_repository_task,
        load_state=load_nightly_state_task,
        record_state=record_nightly_state_task,
    )
