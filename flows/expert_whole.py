"""Whole-proof expert iteration inside a curriculum step (`expert_iteration.mode: whole_proof`):
the step's whole-proof checkpoint (sft_proof) samples proofs for the pool's statements, Lean keeps
the verified ones (at most `keep` per statement, shortest first), sft_proof trains on every verified
whole proof, repeat (tasks/expert/whole_proof.py, docs/whole-proof.md).

Per round: the pool (statements holding fewer than `stop_after` kept proofs), its batches sampled as
mapped cached tasks (a killed round resumes with the batches already sampled kept), the verified
proofs kept, the round's training snapshot (traced whole proofs plus every verified whole proof),
training from the previous round's checkpoint, the proving evaluation of the new checkpoint, and the
round's metrics. A round that verifies nothing new ends the rounds.
"""

from __future__ import annotations

from prefect import unmapped

from storage.snapshot_ref import SnapshotRef
from tasks.checkpoints import CheckpointRef, StartingPoints
from tasks.expert import whole_proof as wp
from tasks.prefect_tasks import whole_proof_tasks

from . import ui


def whole_proof_rounds(
    t, home: str, config, step, total: int, snapshot: SnapshotRef, start: CheckpointRef, run_id: str
):
    """(the last round's checkpoint, one summary per round) of `step`, starting from `start`."""
    from .expert import round_settings, say_adapter
    from .prove import proving_step

    ei, e = config.expert_iteration, whole_proof_tasks(home)
    search = config.expert_search().model_copy(update={"mode": "whole_proof", "num_tactics": ei.whole_proof.samples})
    settings = round_settings(config.trainers.enabled()[ei.trainer], ei.training)
    eval_repos = step.seen if config.evaluation.all_repositories_so_far else step.repo_ids
    sets = list(ei.whole_proof.statement_sets)
    current, summaries = start, []
    for r in range(1, ei.rounds + 1):
        ui.show(f"expert round {r}: sample whole proofs", step.step, total, ei.trainer, step.name)
        pool = e.pool(home, step.seen, config.split_kind, ei, search, step.step, r)
        theorems, size = pool["theorems"], search.batch_size
        batches = [theorems[i : i + size] for i in range(0, len(theorems), size)]
        futures = e.search.map(
            unmapped(home), unmapped(search), unmapped(current.to_dict()), batches, unmapped(ei.whole_proof.samples),
            unmapped(step.step), unmapped(r), range(len(batches)),
        )  # fmt: skip
        records = [record for f in futures for record in f.result()]
        say_adapter(records, r)
        new = e.keep(home, records, ei, search, run_id, step.step, r, current.checkpoint_id)
        data, counts = e.data(home, snapshot, config.split_kind, sets, step.step, r)
        trained = None
        if new:
            ui.show(f"expert round {r}: train", step.step, total, ei.trainer, step.name)
            starts = StartingPoints(previous={ei.trainer: current})
            trained = t.train(
                home, ei.trainer, settings, SnapshotRef.from_dict(data), config.split_kind, starts,
                step=step.step, repo_name=f"{step.name} round {r}",
            )  # fmt: skip
            if config.evaluation.proving is not None and ei.evaluate_rounds:
                ui.show(f"expert round {r}: evaluate", step.step, total, ei.trainer, step.name)
                proving_step(home, config.evaluation.proving, trained, eval_repos,
                             config.split_kind, run_id, step.step, step.primary)  # fmt: skip
        loss = trained.figures.get("train_loss") if trained else None
        rows = wp.metrics(records, counts, new, loss, r, step.primary, config.split_kind, current.checkpoint_id)
        t.record_metrics(home, rows, run_id, step.step, step.primary)
        summaries.append(
            {
                "round": r,
                "mode": "whole_proof",
                "searched_with": current.checkpoint_id,
                "trained": trained.to_dict() if trained else None,
                "untried": len(pool["untried"]),
                **{row["metric"]: row["value"] for row in rows},
            }
        )
        if trained is None:
            break  # nothing new kept: another round would sample the same statements with the same checkpoint
        current = trained
    return current, summaries
