"""The proving flows' tasks (flows/prove.py), around tasks/proving/: each sets a name, a cache
key and nothing else; the logic is in plain functions. A batch of theorems is one task, cached
by (store, checkpoint id, the batch's theorems, the settings), so a task runner (threads,
Dask, Ray) spreads batches over workers and a rerun searches nothing again.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE
from prefect.tasks import Task

from storage.ids import stable_hash
from storage.store import Store

from .. import limits
from ..proving import evaluate, patches, preflight, sorry
from ..proving.config import ProvingSettings
from ..proving.generator_ref import GeneratorRef
from ..proving.patches import Patch
from ..proving.records import SearchRecord, Selection, TheoremToTry, Untried
from ..run_records import MetricRow
from .caching import cached_under
from .limits import holding


def _prove_key(ctx, p) -> str:
    theorems = [TheoremToTry.of(t).theorem_id for t in p["theorems"]]
    settings = p["settings"].model_dump(mode="json", exclude={"benchmarks"})  # which theorems: the batch says
    what = {"theorems": theorems, "settings": settings, "records": evaluate.RECORD_VERSION}
    if p.get("baseline"):
        what["baseline"] = True  # the closing-tactics baseline, not the checkpoint, generated
    return f"prove-{Store.open(p['home']).instance_id}-{p['generator'].checkpoint_id}-{stable_hash(what, 16)}"


@task(name="check-proving", task_run_name="check-proving", cache_policy=NO_CACHE)  # no hash suffix in the UI
def check_proving_task(
    home: str, settings: ProvingSettings, generator: GeneratorRef, theorems: list[TheoremToTry]
) -> None:
    preflight.check_proving(Store.open(home), settings, generator.path, theorems)


@task(name="select-theorems", task_run_name="select-theorems", cache_policy=NO_CACHE)  # no hash suffix in the UI
def select_theorems_task(
    home: str, repo_ids: list[str], split_kind: str, settings: ProvingSettings, snapshot_id: str | None = None
) -> Selection:
    """The theorems to try and those that cannot be, with the reason; none to try fails here."""
    selection = evaluate.select_theorems(Store.open(home), repo_ids, split_kind, settings, snapshot_id)
    evaluate.require_theorems(selection, repo_ids, settings)
    return selection


@task(
    name="resolve-prove-inputs", task_run_name="resolve-prove-inputs", cache_policy=NO_CACHE
)  # no hash suffix in the UI
def resolve_task(
    home: str, repos: list[str], theorems: list[str], checkpoint: str | None, settings: ProvingSettings
) -> tuple[list[TheoremToTry], GeneratorRef, list[Untried]]:
    """The `sorry` theorems to try, the generator's checkpoint and the `sorry` theorems that cannot
    be tried (with their reasons); bad input fails here."""
    return sorry.prove_inputs(Store.open(home, create=False), repos, theorems, checkpoint, settings)


@task(name="prove-batch", task_run_name="prove-batch[{batch}]")
def prove_batch_task(
    home: str,
    settings: ProvingSettings,
    generator: GeneratorRef,
    theorems: list[TheoremToTry],
    batch: int,
    baseline: bool = False,
) -> list[SearchRecord]:
    with holding(limits.LEAN, limits.lean_slots(settings)):
        return evaluate.prove_theorems(
            Store.open(home), settings, generator.path, theorems, Path(home) / "models", baseline
        )


@task(name="proving-metrics", task_run_name="proving-metrics", cache_policy=NO_CACHE)  # no hash suffix in the UI
def proving_metrics_task(
    records: list[SearchRecord],
    settings: ProvingSettings,
    checkpoint_id: str,
    split_kind: str,
    untried: list[Untried] = (),
    baseline: bool = False,
) -> list[MetricRow]:
    return [
        MetricRow.of_metric(m, evaluate.PROVING, split_kind, checkpoint_id)
        for m in evaluate.proving_metrics(records, settings, untried, baseline)
    ]


@task(
    name="record-theorem-results", task_run_name="record-theorem-results", cache_policy=NO_CACHE
)  # no hash suffix in the UI
def record_theorem_results_task(
    home: str,
    settings: ProvingSettings,
    records: list[SearchRecord],
    untried: list[Untried],
    run_id: str,
    step: int,
    checkpoint_id: str,
    split_kind: str,
    baseline: list[SearchRecord] = (),
) -> int:
    """Each theorem's outcome (and the baseline's, and each untried theorem's reason) to `theorem_results`."""
    from storage.theorem_results import record_results

    rows = evaluate.theorem_rows(records, untried, settings) + evaluate.theorem_rows(baseline, [], settings, True)
    return record_results(Store.open(home), rows, run_id, step, checkpoint_id, split_kind)


@task(name="record-proofs", task_run_name="record-proofs", cache_policy=NO_CACHE)  # no hash suffix in the UI
def record_proofs_task(home: str, records: list[SearchRecord], run_id: str, checkpoint_id: str, purpose: str) -> int:
    from storage.proofs import record_proofs

    return record_proofs(Store.open(home), evaluate.proof_rows(records, run_id, checkpoint_id, purpose))


@task(name="write-patches", task_run_name="write-patches", cache_policy=NO_CACHE)  # no hash suffix in the UI
def write_patches_task(home: str, proofs: list[SearchRecord], out_dir: str) -> list[Patch]:
    return patches.write_patches(Store.open(home), proofs, Path(out_dir))


@dataclass(frozen=True)
class ProvingTasks:
    """The proving flows' tasks, configured for one Dojoflow home (`proving_tasks`)."""

    check: Task
    resolve: Task
    select: Task
    prove_batch: Task
    metrics: Task
    record_results: Task
    record_proofs: Task
    write_patches: Task


def proving_tasks(home: str | Path) -> ProvingTasks:
    """The proving tasks, `prove_batch` cached under `home` like the curriculum's tasks."""
    return ProvingTasks(
        check=check_proving_task,
        resolve=resolve_task,
        select=select_theorems_task,
        prove_batch=cached_under(home)(prove_batch_task, _prove_key),
        metrics=proving_metrics_task,
        record_results=record_theorem_results_task,
        record_proofs=record_proofs_task,
        write_patches=write_patches_task,
    )
