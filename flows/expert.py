"""Expert iteration inside a curriculum step: search with the step's tactic generator, keep what
the verifier accepts, train on it, repeat (tasks/expert/, docs/expert-iteration.md).

Per round: the pool (train theorems without a found proof), its batches searched as mapped
cached tasks (a killed round resumes with the batches already searched kept), the verified
proofs stored once per theorem and toolchain, the round's training data (traced plus found),
training from the previous round's checkpoint (the trainer's own cached task, checkpoint and
resume), the proving evaluation of the new checkpoint (pass@k on val and test), and the round's
metrics. A round that proves nothing new ends the rounds: the next would search the same
theorems with the same checkpoint.

The loop (`expert_rounds`) is the same in both modes; what differs (which tasks search, keep and
build the data, and the round's metrics) is a mode object: `TacticRounds` here, `WholeProofRounds`
in flows/expert_whole.py.
"""

from __future__ import annotations

from prefect import unmapped

from storage.snapshot_ref import SnapshotRef
from tasks.checkpoints import CheckpointRef, StartingPoints
from tasks.expert import steps
from tasks.expert.pool import PoolRequest
from tasks.prefect_tasks import expert_tasks
from tasks.proving.records import SearchRecord
from tasks.run_records import MetricRow

from .step_context import CurriculumStep


def round_settings(settings, overrides: dict):
    """The trainer's settings for a round: its `training` with the rounds' overrides, never from the base."""
    update = {"training": {**settings.training, **overrides}}
    if "restart_from_base" in type(settings).model_fields:
        update["restart_from_base"] = False
    return type(settings).model_validate({**settings.model_dump(), **update})


def say_adapter(records: list, round: int) -> None:
    """One log line per round saying which model an endpoint generator searched with (the round's
    adapter, loaded into the server, or the server's own model and why)."""
    from prefect import get_run_logger

    for status in sorted({r.adapter for r in records if r.adapter}):
        get_run_logger().info("expert round %s, endpoint generator: %s", round, status)


def starting_points(home: str, config) -> dict[str, CheckpointRef]:
    """What the first step starts from: with `continue_from_last`, the trainer's newest round checkpoint."""
    ei = config.expert_iteration
    if ei is None or not ei.continue_from_last:
        return {}
    last = expert_tasks(home).continue_from(home, ei.trainer)
    return {ei.trainer: CheckpointRef.from_dict(last)} if last else {}


class TacticRounds:
    """Tactic mode: best-first (or the configured) search of train theorems; found proofs stored."""

    searching = "search"
    record = SearchRecord

    def __init__(self, at: CurriculumStep):
        self.at, self.ei, self.e = at, at.config.expert_iteration, expert_tasks(at.home)
        self.search_settings = at.config.expert_search()

    def search(self, batches: list, current: CheckpointRef, r: int):
        at = self.at
        return self.e.search.map(
            unmapped(at.home), unmapped(self.search_settings), unmapped(current), batches,
            unmapped(at.step.step), unmapped(r), range(len(batches)),
        )  # fmt: skip

    def keep(self, records: list, r: int, searched_with: str) -> int:
        """Store the verified proofs; how many records hold one (a rerun stores none again, and trains)."""
        at = self.at
        self.e.store_found(at.home, records, self.search_settings, at.run_id, at.step.step, r, searched_with)
        return sum(1 for record in records if record.proof)

    def data(self, r: int):
        at = self.at
        return self.e.data(at.home, at.snapshot, at.config.split_kind, self.ei.found_to_traced, at.step.seen,
                           at.step.step, r)  # fmt: skip

    def metrics(self, records, counts, new: int, loss, r: int, searched_with: str) -> list[MetricRow]:
        return steps.metrics(records, counts, loss, r, self.at.step.primary, self.at.config.split_kind, searched_with)

    def summary(self, pool) -> dict:
        return {}


def expert_rounds(at: CurriculumStep, start: CheckpointRef):
    """(the last round's checkpoint, one summary per round) of the step `at`, starting from `start`."""
    from .prove import proving_step

    ei = at.config.expert_iteration
    if ei.mode == "whole_proof":  # sample, keep, train sft_proof (flows/expert_whole.py)
        from .expert_whole import WholeProofRounds

        mode = WholeProofRounds(at)
    else:
        mode = TacticRounds(at)
    settings = round_settings(at.config.trainers.enabled()[ei.trainer], ei.training)
    current, summaries = start, []
    for r in range(1, ei.rounds + 1):
        # 1. The pool, searched in batches (one cached task each) by the current checkpoint
        at.show(f"expert round {r}: {mode.searching}", ei.trainer)
        asked = PoolRequest(repo_ids=at.step.seen, split_kind=at.config.split_kind, settings=ei,
                            search=mode.search_settings, step=at.step.step, round=r)  # fmt: skip
        pool = mode.e.pool(at.home, asked)
        size = mode.search_settings.batch_size
        batches = [pool.theorems[i : i + size] for i in range(0, len(pool.theorems), size)]
        records = [mode.record.of(record) for f in mode.search(batches, current, r) for record in f.result()]
        say_adapter(records, r)

        # 2. Verified proofs kept; the round's data; training from the current checkpoint
        new = mode.keep(records, r, current.checkpoint_id)
        data, counts = mode.data(r)
        trained = None
        if new:
            at.show(f"expert round {r}: train", ei.trainer)
            trained = at.t.train(
                at.home, ei.trainer, settings, SnapshotRef.from_dict(data), at.config.split_kind,
                StartingPoints(previous={ei.trainer: current}), step=at.step.step, repo_name=f"{at.step.name} round {r}",
            )  # fmt: skip
            if at.config.evaluation.proving is not None and ei.evaluate_rounds:  # pass@k of the round's checkpoint
                at.show(f"expert round {r}: evaluate", ei.trainer)
                proving_step(at.context, at.config.evaluation.proving, trained)

        # 3. The round's metrics, keyed by the checkpoint that searched
        loss = trained.figures.get("train_loss") if trained else None
        rows = mode.metrics(records, counts, new, loss, r, current.checkpoint_id)
        at.t.record_metrics(at.home, rows, at.run_id, at.step.step, at.step.primary)
        summaries.append(
            {
                "round": r,
                "searched_with": current.checkpoint_id,
                "trained": trained.to_dict() if trained else None,
                **mode.summary(pool),
                **{row.metric: row.value for row in rows},
            }
        )
        if trained is None:
            break  # nothing new: another round would search the same theorems with the same checkpoint
        current = trained
    return current, summaries
