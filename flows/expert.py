"""Expert iteration inside a curriculum step: search with the step's tactic generator, keep what
the verifier accepts, train on it, repeat (tasks/expert/, docs/expert-iteration.md).

Per round: the pool (train theorems without a found proof), its batches searched as mapped
cached tasks (a killed round resumes with the batches already searched kept), the verified
proofs stored once per theorem and toolchain, the round's training data (traced plus found),
training from the previous round's checkpoint (the trainer's own cached task, checkpoint and
resume), the proving evaluation of the new checkpoint (pass@k on val and test), and the round's
metrics. A round that proves nothing new ends the rounds: the next would search the same
theorems with the same checkpoint.
"""

from __future__ import annotations

from prefect import unmapped

from storage.snapshot_ref import SnapshotRef
from tasks.checkpoints import CheckpointRef, StartingPoints
from tasks.expert import steps
from tasks.prefect_tasks import expert_tasks

from . import ui


def round_settings(settings, overrides: dict):
    """The trainer's settings for a round: its `training` with the rounds' overrides, never from the base."""
    update = {"training": {**settings.training, **overrides}}
    if "restart_from_base" in type(settings).model_fields:
        update["restart_from_base"] = False
    return type(settings).model_validate({**settings.model_dump(), **update})


def say_adapter(records: list[dict], round: int) -> None:
    """One log line per round saying which model an endpoint generator searched with (the round's
    adapter, loaded into the server, or the server's own model and why)."""
    from prefect import get_run_logger

    for status in sorted({r["adapter"] for r in records if r.get("adapter")}):
        get_run_logger().info("expert round %s, endpoint generator: %s", round, status)


def starting_points(home: str, config) -> dict[str, CheckpointRef]:
    """What the first step starts from: with `continue_from_last`, the trainer's newest round checkpoint."""
    ei = config.expert_iteration
    if ei is None or not ei.continue_from_last:
        return {}
    last = expert_tasks(home).continue_from(home, ei.trainer)
    return {ei.trainer: CheckpointRef.from_dict(last)} if last else {}


def expert_rounds(t, home: str, config, step, total: int, snapshot: SnapshotRef, start: CheckpointRef, run_id: str):
    """(the last round's checkpoint, one summary per round) of `step`, starting from `start`."""
    from .prove import proving_step

    if config.expert_iteration.mode == "whole_proof":  # sample, keep, train sft_proof (flows/expert_whole.py)
        from .expert_whole import whole_proof_rounds

        return whole_proof_rounds(t, home, config, step, total, snapshot, start, run_id)
    ei, search, e = config.expert_iteration, config.expert_search(), expert_tasks(home)
    settings = round_settings(config.trainers.enabled()[ei.trainer], ei.training)
    eval_repos = step.seen if config.evaluation.all_repositories_so_far else step.repo_ids
    current, summaries = start, []
    for r in range(1, ei.rounds + 1):
        # 1. The pool, searched in batches (one cached task each) by the current checkpoint
        ui.show(f"expert round {r}: search", step.step, total, ei.trainer, step.name)
        pool = e.pool(home, step.seen, config.split_kind, ei, search, step.step, r)
        theorems, size = pool["theorems"], search.batch_size
        batches = [theorems[i : i + size] for i in range(0, len(theorems), size)]
        futures = e.search.map(
            unmapped(home), unmapped(search), unmapped(current.to_dict()), batches,
            unmapped(step.step), unmapped(r), range(len(batches)),
        )  # fmt: skip
        records = [record for f in futures for record in f.result()]
        say_adapter(records, r)

        # 2. Verified proofs stored; the round's data; training from the current checkpoint
        e.store_found(home, records, search, run_id, step.step, r, current.checkpoint_id)
        data, counts = e.data(home, snapshot, config.split_kind, ei.found_to_traced, step.seen, step.step, r)
        trained = None
        if any(record["proof"] for record in records):
            ui.show(f"expert round {r}: train", step.step, total, ei.trainer, step.name)
            starts = StartingPoints(previous={ei.trainer: current})
            trained = t.train(
                home, ei.trainer, settings, SnapshotRef.from_dict(data), config.split_kind, starts,
                step=step.step, repo_name=f"{step.name} round {r}",
            )  # fmt: skip
            if config.evaluation.proving is not None and ei.evaluate_rounds:  # pass@k of the round's checkpoint
                ui.show(f"expert round {r}: evaluate", step.step, total, ei.trainer, step.name)
                proving_step(home, config.evaluation.proving, trained, eval_repos,
                             config.split_kind, run_id, step.step, step.primary)  # fmt: skip

        # 3. The round's metrics, keyed by the checkpoint that searched
        loss = trained.figures.get("train_loss") if trained else None
        rows = steps.metrics(records, counts, loss, r, step.primary, config.split_kind, current.checkpoint_id)
        t.record_metrics(home, rows, run_id, step.step, step.primary)
        summaries.append(
            {
                "round": r,
                "searched_with": current.checkpoint_id,
                "trained": trained.to_dict() if trained else None,
                **{row["metric"]: row["value"] for row in rows},
            }
        )
        if trained is None:
            break  # nothing new: another round would search the same theorems with the same checkpoint
        current = trained
    return current, summaries
