"""What every wrapper shares: the store of a home, the retry rule, and the JSON result
cache under a home.

Cache keys come from content ids (source fingerprint, snapshot id, checkpoint id),
never from run ids or paths, so a new run reuses every finished step. Records are
JSON manifests under `<home>/prefect/results`; SERIALIZABLE isolation with a file
lock manager (flock: released when a killed holder dies) makes two runs on one
store compute each key once.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from prefect.cache_policies import CacheKeyFnPolicy
from prefect.tasks import Task

from storage.store import Store

from ..prefect_locking import FlockLockManager


def store_of(home: str) -> Store:
    return Store.open(home)


def transient(task, task_run, state) -> bool:
    """Retry only errors that say a retry can help (storage/errors.py)."""
    try:
        state.result()
    except Exception as e:  # noqa: BLE001
        return bool(getattr(e, "transient", False))
    return False


def cache_keys_folder(home: Path) -> Path:
    return Path(home) / "prefect" / "cache-keys"  # must differ from the results, or records overwrite them


def cached_under(home: Path) -> Callable[[Task, Callable], Task]:
    """`cached(task, key_fn)`: `task` with its results cached as JSON under `home`, keyed by
    `key_fn`, one run at a time per key (file locks under `home`)."""
    home = Path(home)
    storage = home / "prefect" / "results"
    keys = cache_keys_folder(home)
    locks = FlockLockManager(home / "prefect" / "locks")

    def cached(t: Task, key_fn: Callable) -> Task:
        policy = CacheKeyFnPolicy(cache_key_fn=key_fn).configure(
            key_storage=keys, lock_manager=locks, isolation_level="SERIALIZABLE"
        )
        return t.with_options(
            cache_policy=policy, result_storage=storage, result_serializer="json", persist_result=True
        )

    return cached


def cached_result_exists(home: str, key: str) -> bool:
    """Whether a cached result is recorded under `key` in `home`'s cache."""
    from prefect.filesystems import LocalFileSystem
    from prefect.results import ResultStore

    records = ResultStore(metadata_storage=LocalFileSystem(basepath=str(cache_keys_folder(Path(home)))))
    return records.exists(key)
