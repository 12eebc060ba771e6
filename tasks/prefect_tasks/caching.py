"""What every wrapper shares: the store of a home, the retry rule, and the JSON result
cache under a home.

Cache keys come from content ids (source fingerprint, snapshot id, checkpoint id),
never from run ids or paths, so a new run reuses every finished step. Records are
JSON manifests under `<home>/prefect/results`, or under a Prefect storage block the config
names (`result_storage`: any fsspec file system, a shared mount, S3, GCS; docs/operations.md);
SERIALIZABLE isolation with a file lock manager (flock: released when a killed holder dies)
makes two runs on one store compute each key once. The locks stay under the home: they need
a POSIX file system, which object stores are not.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from prefect.cache_policies import CacheKeyFnPolicy
from prefect.tasks import Task

from storage.errors import InputError
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


def result_places(home: Path, results=None) -> tuple:
    """(where results go, where cache records go): folders under `home`, or the storage block
    `results` (`load_result_storage`; Prefect wants a saved block there) and its `cache-keys` folder."""
    if results is None:
        return Path(home) / "prefect" / "results", cache_keys_folder(Path(home))
    return results, _under(results, "cache-keys")


def _under(block, sub: str):
    """A copy of a file-system block rooted at `<basepath>/<sub>`, not tied to the saved document
    (Prefect saves it anonymously, as it does for a path)."""
    base = str(block.basepath or "").rstrip("/")
    copy = block.model_copy(update={"basepath": f"{base}/{sub}" if base else sub})
    copy._block_document_id = copy._block_document_name = None
    copy._is_anonymous = True
    return copy


def cached_under(home: Path, results=None) -> Callable[[Task, Callable], Task]:
    """`cached(task, key_fn)`: `task` with its results cached as JSON under `home` (or the
    storage block `results`), keyed by `key_fn`, one run at a time per key (file locks under `home`)."""
    home = Path(home)
    storage, keys = result_places(home, results)
    locks = FlockLockManager(home / "prefect" / "locks")

    def cached(t: Task, key_fn: Callable) -> Task:
        policy = CacheKeyFnPolicy(cache_key_fn=key_fn).configure(
            key_storage=keys, lock_manager=locks, isolation_level="SERIALIZABLE"
        )
        return t.with_options(
            cache_policy=policy, result_storage=storage, result_serializer="json", persist_result=True
        )

    return cached


def cached_result_exists(home: str, key: str, results=None) -> bool:
    """Whether a cached result is recorded under `key` in `home`'s cache (or the block `results`)."""
    from prefect.filesystems import LocalFileSystem
    from prefect.results import ResultStore

    keys = result_places(Path(home), results)[1]
    records = ResultStore(metadata_storage=LocalFileSystem(basepath=str(keys)) if isinstance(keys, Path) else keys)
    return records.exists(key)


PROBE = ".dojoflow-write-check"


def load_result_storage(name: str | None):
    """The storage block `name` (`<block type slug>/<block name>`) once a file written to it
    reads back; None for None (results under the home). InputError when it does not exist, is
    no writable file system, or cannot be written."""
    if name is None:
        return None
    from prefect.blocks.core import Block
    from prefect.filesystems import WritableFileSystem

    field = f"result_storage ({name})"
    try:
        block = Block.load(name)
    except (ValueError, KeyError) as e:
        raise InputError(
            field,
            f"no such block on the Prefect server ({e})",
            "create it (`prefect block create local-file-system`, the UI's Blocks page) or fix the name",
        ) from None
    if not isinstance(block, WritableFileSystem) or not hasattr(block, "basepath"):
        raise InputError(
            field,
            f"is a {type(block).__name__}, not a file system",
            "name a local-file-system or remote-file-system block",
        )
    try:
        block.write_path(PROBE, b"ok")
        ok = block.read_path(PROBE) == b"ok"
    except Exception as e:  # noqa: BLE001 (any file system's own error)
        raise InputError(
            field, f"cannot be written ({type(e).__name__}: {e})", "fix its basepath or permissions"
        ) from None
    if not ok:
        raise InputError(field, "does not read back what was written", "check the file system it names")
    return block
