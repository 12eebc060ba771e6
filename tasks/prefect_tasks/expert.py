"""Expert iteration's tasks (flows/expert.py), around tasks/expert/steps.py: each a name and a
cache key around one plain function. A batch's search is cached like the proving evaluation's
(store, searching checkpoint, the batch's theorems, the settings), so a killed round resumes with
the batches already searched kept. `expert_tasks(home)` gives them configured for one home.
"""

from __future__ import annotations

from dataclasses import dataclass

from prefect import task
from prefect.cache_policies import NO_CACHE
from prefect.tasks import Task

from storage.ids import stable_hash
from storage.snapshot_ref import SnapshotRef

from .. import limits
from ..checkpoints import CheckpointRef
from ..expert import steps
from ..expert import whole_proof as wp
from ..expert.config import ExpertIterationSettings
from ..expert.pool import PoolRequest
from ..proving.config import ProvingSettings
from ..proving.evaluate import RECORD_VERSION
from ..proving.records import Pool, SampleRecord, SearchRecord, TheoremToTry
from .caching import cached_under, store_of
from .limits import holding


def _search_key(ctx, p) -> str:
    """A batch's cache key: the store, the searching checkpoint, the batch's theorems (their ids; a
    whole-proof batch's statement keys and samples), the settings and the records' version."""
    whole = p.get("samples") is not None
    what = {
        "theorems": [getattr(TheoremToTry.of(t), "key" if whole else "theorem_id") for t in p["theorems"]],
        "settings": p["search"].model_dump(mode="json"),
        **({"samples": p["samples"]} if whole else {}),
        "records": RECORD_VERSION,
    }
    kind = "expert-wp-search" if whole else "expert-search"
    checkpoint = CheckpointRef.from_dict(p["checkpoint"]).checkpoint_id
    return f"{kind}-{store_of(p['home']).instance_id}-{checkpoint}-{stable_hash(what, 16)}"


@task(name="expert-pool", task_run_name="expert-pool[step {request.step} round {request.round}]", cache_policy=NO_CACHE)
def pool_task(home: str, request: PoolRequest) -> Pool:
    """The round's pool, in the settings' mode (tactic or whole-proof)."""
    return steps.select(store_of(home), request)


@task(name="expert-search", task_run_name="expert-search[step {step} round {round} batch {batch}]")
def search_task(
    home: str,
    search: ProvingSettings,
    checkpoint: CheckpointRef,
    theorems: list[TheoremToTry],
    step: int,
    round: int,
    batch: int,
    samples: int | None = None,
) -> list[SearchRecord] | list[SampleRecord]:
    """One batch searched (tactic mode), or `samples` whole proofs sampled per statement."""
    with holding(limits.LEAN, limits.lean_slots(search)):
        return steps.search(store_of(home), search, checkpoint, theorems, home, samples)


@task(name="expert-store-found", task_run_name="expert-store-found[step {step} round {round}]", cache_policy=NO_CACHE)
def store_found_task(
    home: str,
    records: list[SearchRecord],
    search: ProvingSettings,
    run_id: str,
    step: int,
    round: int,
    checkpoint_id: str,
) -> int:
    return steps.store_found(store_of(home), records, search, run_id, step, round, checkpoint_id)


@task(name="expert-data", task_run_name="expert-data[step {step} round {round}]", cache_policy=NO_CACHE)
def data_task(
    home: str, snapshot: SnapshotRef, split_kind: str, ratio: float, repo_ids: list[str], step: int, round: int
) -> tuple[SnapshotRef, dict[str, int]]:
    return steps.training_data(store_of(home), snapshot, split_kind, ratio, repo_ids, step, round)


@task(name="expert-continue-from", task_run_name="expert-continue-from[{trainer}]", cache_policy=NO_CACHE)
def continue_from_task(home: str, trainer: str) -> CheckpointRef | None:
    return steps.last_round_checkpoint(store_of(home), home, trainer)


@task(name="expert-wp-keep", task_run_name="expert-wp-keep[step {step} round {round}]", cache_policy=NO_CACHE)
def wp_keep_task(
    home: str,
    records: list[SampleRecord],
    settings: ExpertIterationSettings,
    search: ProvingSettings,
    run_id: str,
    step: int,
    round: int,
    ckpt: str,
) -> int:
    return wp.store_kept(store_of(home), records, settings, search, run_id, step, round, ckpt)


@task(name="expert-wp-data", task_run_name="expert-wp-data[step {step} round {round}]", cache_policy=NO_CACHE)
def wp_data_task(
    home: str, snapshot: SnapshotRef, split_kind: str, sets: list[str], step: int, round: int
) -> tuple[SnapshotRef, dict[str, int]]:
    return wp.round_data(store_of(home), snapshot, split_kind, sets, step, round)


@dataclass(frozen=True)
class WholeProofTasks:
    """Whole-proof expert iteration's tasks (flows/expert_whole.py), configured for one home."""

    pool: Task
    search: Task
    keep: Task
    data: Task


def whole_proof_tasks(home) -> WholeProofTasks:
    """The tasks, named `expert-wp-*` in the UI; pool and search are the tactic mode's, in whole-proof mode."""
    names = {"pool": "expert-wp-pool[step {request.step} round {request.round}]",
             "search": "expert-wp-search[step {step} round {round} batch {batch}]"}  # fmt: skip
    return WholeProofTasks(
        pool=pool_task.with_options(name="expert-wp-pool", task_run_name=names["pool"]),
        search=cached_under(home)(
            search_task.with_options(name="expert-wp-search", task_run_name=names["search"]), _search_key
        ),
        keep=wp_keep_task,
        data=wp_data_task,
    )


@dataclass(frozen=True)
class ExpertTasks:
    """Expert iteration's tasks, configured for one Dojoflow home (`expert_tasks`)."""

    pool: Task
    search: Task
    store_found: Task
    data: Task
    continue_from: Task


def expert_tasks(home) -> ExpertTasks:
    """The tasks, the batch search cached under `home` like the curriculum's."""
    return ExpertTasks(
        pool=pool_task,
        search=cached_under(home)(search_task, _search_key),
        store_found=store_found_task,
        data=data_task,
        continue_from=continue_from_task,
    )
