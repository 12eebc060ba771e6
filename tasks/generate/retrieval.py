"""Retrieval-augmented generation, as ReProver's RetrievalProver: the retriever's top premises
accessible at the theorem's position are put in front of the proof state in the prompt.

The premises come from a trained retriever checkpoint (tasks/retriever/index.py) over the
store's premise corpus; accessibility is the retriever's own rule (premises of imported
files, and those earlier in the theorem's file). The inner generator sees
`<premise>\\n...\\n\\n<goals>`, the input ReProver's retrieval-augmented model is trained on;
a generator trained without premises is best used with `kind: checkpoint`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from .base import Candidates, TacticQuery


@dataclass(frozen=True)
class RetrievalGenerator:
    """Wraps a generator; adds the `num_premises` best accessible premises to each state."""

    inner: Any  # a TacticGenerator
    retriever: Any  # tasks.retriever.index.Retriever
    index: Any  # tasks.retriever.index.PremiseIndex
    num_premises: int
    name: str = "retrieval"

    @classmethod
    def load(cls, inner, retriever_checkpoint: str, premises, num_premises: int) -> "RetrievalGenerator":
        """`premises`: a SnapshotRef or a tasks.retriever.data.PremiseCorpus."""
        from tasks.retriever.index import Retriever

        retriever = Retriever.load(retriever_checkpoint)
        return cls(inner=inner, retriever=retriever, index=retriever.index(premises), num_premises=num_premises)

    def premises_for(self, queries: Sequence[TacticQuery]) -> list[list[str]]:
        """The premise texts put into each query's prompt, best first."""
        from tasks.retriever.index import search_embeddings

        if not queries:
            return []
        embeddings = self.retriever.encode([q.goals for q in queries])
        out = []
        for q, emb in zip(queries, embeddings):
            t = q.theorem
            where = (t.repo_id, t.file_path, t.start) if t is not None and t.start is not None else None
            rows, _ = search_embeddings(self.index.embeddings, emb, self.num_premises, self.index.candidates(where))
            out.append([self.index.corpus.texts[int(i)] for i in rows])
        return out

    def _augmented(self, queries: Sequence[TacticQuery]) -> list[TacticQuery]:
        return [
            replace(q, goals="\n".join(premises) + "\n\n" + q.goals if premises else q.goals)
            for q, premises in zip(queries, self.premises_for(queries))
        ]

    def generate(self, queries: Sequence[TacticQuery], k: int) -> list[Candidates]:
        return self.inner.generate(self._augmented(queries), k)

    def generate_proofs(self, queries: Sequence[TacticQuery], n: int) -> list[Candidates]:
        return self.inner.generate_proofs(self._augmented(queries), n)

    def reseed(self, seed: int) -> None:
        self.inner.reseed(seed)

    def close(self) -> None:
        self.inner.close()
