"""Prefect task wrapper of tasks/benchmarks.py: store the pipeline's benchmarks and name
their fingerprints in the snapshot settings (so every snapshot built with them says so)."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from storage.store import Store
from tasks.benchmarks import register_benchmarks


@task(
    name="register-benchmarks", task_run_name="register-benchmarks", cache_policy=NO_CACHE
)  # no hash suffix in the UI
def register_benchmarks_task(home: str, benchmarks: list, snapshot_settings):
    return register_benchmarks(Store.open(home), list(benchmarks), snapshot_settings)
