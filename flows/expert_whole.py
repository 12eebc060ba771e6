"""Whole-proof expert iteration inside a curriculum step (`expert_iteration.mode: whole_proof`):
the step's whole-proof checkpoint (sft_proof) samples proofs for the pool's statements, Lean keeps
the verified ones (at most `keep` per statement, shortest first), sft_proof trains on every verified
whole proof, repeat (tasks/expert/whole_proof.py, docs/whole-proof.md).

Per round: the pool (statements holding fewer than `stop_after` kept proofs), its batches sampled as
mapped cached tasks (a killed round resumes with the batches already sampled kept), the verified
proofs kept, the round's training snapshot (traced whole proofs plus every verified whole proof),
training from the previous round's checkpoint, the proving evaluation of the new checkpoint, and the
round's metrics. A round that verifies nothing new ends the rounds. The loop is flows/expert.py's
`expert_rounds`; this module is what the mode does differently.
"""

from __future__ import annotations

from prefect import unmapped

from tasks.checkpoints import CheckpointRef
from tasks.expert import whole_proof as wp
from tasks.prefect_tasks import whole_proof_tasks
from tasks.proving.records import SampleRecord
from tasks.run_records import MetricRow

from .step_context import CurriculumStep


class WholeProofRounds:
    """Whole-proof mode: `samples` proofs per statement, the verified ones kept, sft_proof trains."""

    searching = "sample whole proofs"
    record = SampleRecord

    def __init__(self, at: CurriculumStep):
        self.at, self.ei, self.e = at, at.config.expert_iteration, whole_proof_tasks(at.home)
        samples = self.ei.whole_proof.samples
        self.search_settings = at.config.expert_search().model_copy(update={"mode": "whole_proof",
                                                                            "num_tactics": samples})  # fmt: skip

    def search(self, batches: list, current: CheckpointRef, r: int):
        at = self.at
        return self.e.search.map(
            unmapped(at.home), unmapped(self.search_settings), unmapped(current), batches,
            unmapped(at.step.step), unmapped(r), range(len(batches)), samples=unmapped(self.ei.whole_proof.samples),
        )  # fmt: skip

    def keep(self, records: list, r: int, searched_with: str) -> int:
        """Keep the verified proofs; how many the round kept (the same when it runs again)."""
        at = self.at
        return self.e.keep(at.home, records, self.ei, self.search_settings, at.run_id, at.step.step, r, searched_with)

    def data(self, r: int):
        at = self.at
        sets = list(self.ei.whole_proof.statement_sets)
        return self.e.data(at.home, at.snapshot, at.config.split_kind, sets, at.step.step, r)

    def metrics(self, records, counts, new: int, loss, r: int, searched_with: str) -> list[MetricRow]:
        at = self.at
        return wp.metrics(records, counts, new, loss, r, at.step.primary, at.config.split_kind, searched_with)

    def summary(self, pool) -> dict:
        return {"mode": "whole_proof", "untried": len(pool.untried)}
