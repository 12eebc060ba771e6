"""`evaluate_retriever`: R@k and MRR of a retriever checkpoint, per repository and split.

Implements the `evaluate` half of `tasks/trainers/base.py`:

    evaluate_retriever(settings, checkpoint_dir, snapshot, split_kind, splits, repo_ids, *, model_cache_dir) -> list[Metric]

Metrics (LeanDojo's, docs/architecture.md), over the tactics that have at least one gold premise in the corpus,
ranking only the premises accessible to the tactic's theorem:
R@k = |top-k ∩ gold| / |gold|, MRR = 1 / rank of the first gold premise (0 if none is
accessible), each ×100 and averaged over tactics. Rows are named `R@1`, `R@10` (one per
`settings.eval_k`) and `MRR`, with `count` = the number of tactics averaged and a 95% interval
over them (a seeded bootstrap over queries, Wilson where every score is 0 or 1; tasks/stats.py).

Every requested (repository, split) also gets two bookkeeping rows, so that nothing is
silently missing from the metrics table:
- `examples`: value = count = the tactics evaluated (with a gold premise in the corpus).
  0 means the split holds no such tactic (empty split, repository without tactics
  there, or no annotated premise in the corpus); the R@k and MRR rows are then absent.
- `gold_missing`: value = the annotated premises of the split's tactics that are not in
  the premise corpus (never used as gold, so never counted in |gold|); count = all
  annotated premises (distinct per tactic).

Premise embeddings are computed once per (checkpoint weights, premise corpus,
max_seq_len) and cached (`tasks.retriever.index`); a second evaluation of the same
checkpoint on the same corpus reads them back instead of re-encoding. Ranking uses the
same exact top-k as `retrieve` (`index.top_k`), not a full sort.
"""

from __future__ import annotations

import logging
from collections.abc import Hashable, Sequence

import numpy as np

from storage.snapshot_ref import SnapshotRef
from tasks.metric_registry import register_metric
from tasks.stats import interval_fields
from tasks.trainers.base import EXAMPLES, EvaluationJob, Metric, evaluation

from .data import PremiseCorpus, examples_from_rows, theorem_starts
from .index import Retriever, first_rank, top_k
from .runtime import as_settings, torch_device

logger = logging.getLogger(__name__)

QUERY_CHUNK = 64  # goal states scored against the whole corpus per matrix product
GOLD_MISSING = "gold_missing"
# What each figure means (tasks/metric_registry.py); R@k and MRR are ×100.
register_metric(
    GOLD_MISSING, direction=None, kind="count", unit="premises", description="gold premises not in the corpus"
)
register_metric("R@{k}", direction="higher", kind="score", unit="percent", question="learning")
register_metric("MRR", direction="higher", kind="score", unit="percent", question="learning")


def retrieval_metrics(
    ranked_ids: Sequence[Sequence[Hashable]],
    gold: Sequence[set],
    ks: Sequence[int] = (1, 10),
    per_query: dict | None = None,
) -> dict:
    """R@k for k in `ks` and MRR, ×100, averaged over the queries with a non-empty gold set.

    `ranked_ids[i]` is query i's ranking, best first (it may be cut anywhere after the
    first gold premise and after max(ks)); `gold[i]` its gold ids. Returns the metrics
    and `count`, the number of queries averaged; `{"count": 0}` when there are none.
    `per_query`, if given, is filled with each metric's per-query fractions (what a
    bootstrap over queries resamples).

    >>> r = retrieval_metrics([["a", "b", "c"]], [{"b", "z"}], ks=(1, 2))
    >>> r["R@1"], r["R@2"], r["MRR"], r["count"]
    (0.0, 50.0, 50.0, 1)
    """
    if len(ranked_ids) != len(gold):
        raise ValueError(f"{len(ranked_ids)} rankings but {len(gold)} gold sets: give one gold set per ranking")
    sums = {k: 0.0 for k in ks}
    rr = 0.0
    n = 0
    for ranked, g in zip(ranked_ids, gold):
        g = set(g)
        if not g:
            continue
        n += 1
        for k in ks:
            recall = len(set(ranked[:k]) & g) / len(g)
            sums[k] += recall
            if per_query is not None:
                per_query.setdefault(f"R@{k}", []).append(recall)
        reciprocal = next((1.0 / rank for rank, pid in enumerate(ranked, start=1) if pid in g), 0.0)
        rr += reciprocal
        if per_query is not None:
            per_query.setdefault("MRR", []).append(reciprocal)
    if n == 0:
        return {"count": 0}
    out = {f"R@{k}": 100.0 * sums[k] / n for k in ks}
    out["MRR"] = 100.0 * rr / n
    out["count"] = n
    return out


def _rankings(query_emb, prem_emb, examples, corpus: PremiseCorpus, max_k: int) -> list[list[int | None]]:
    """Each example's accessible premises by score, for `retrieval_metrics`.

    The top `max_k` (exact, `top_k`'s order); when the first gold premise ranks lower,
    the list runs on to it, the premises in between (which only count as non-gold)
    given as None, so MRR sees the true rank without the list being sorted in full.
    """
    query_emb, prem_emb = np.asarray(query_emb, dtype=np.float32), np.asarray(prem_emb, dtype=np.float32)
    out: list[list[int | None]] = []
    for start in range(0, len(examples), QUERY_CHUNK):
        chunk = examples[start : start + QUERY_CHUNK]
        scores = query_emb[start : start + len(chunk)] @ prem_emb.T
        for row, ex in zip(scores, chunk):
            acc = corpus.accessible_from(ex.node, ex.pos)
            if len(acc) == 0:
                out.append([])
                continue
            sub = row[acc]
            ranked = acc[top_k(sub, max_k)].tolist()
            first = first_rank(sub, np.flatnonzero(np.isin(acc, np.asarray(ex.gold))))
            if first is not None and first[0] > max_k:
                rank, position = first
                ranked += [None] * (rank - max_k - 1) + [int(acc[position])]
            out.append(ranked)
    return out


def _split_groups(
    snapshot: SnapshotRef, split_kind: str, splits: list[str], repo_ids: list[str], corpus: PremiseCorpus
) -> list[tuple[str, str, list, object]]:
    """(repo, split, examples, GoldReport) for every requested (repository, split), empty ones included."""
    groups = []
    for split in splits:
        starts = theorem_starts(snapshot, split_kind, split, repo_ids)
        by_repo: dict[str, list[dict]] = {}
        for row in snapshot.tactics(split_kind, split, repo_ids).to_pylist():
            by_repo.setdefault(row["repo_id"], []).append(row)
        for repo in repo_ids:
            examples, report = examples_from_rows(by_repo.get(repo, []), starts, corpus)
            groups.append((repo, split, examples, report))
    return groups


@evaluation
def evaluate_retriever(settings, job: EvaluationJob) -> list[Metric]:
    """Metric rows (examples, gold_missing, R@k…, MRR) per repository and split; see module doc.

    The checkpoint is loaded only if some (repository, split) has a tactic to evaluate.
    """
    checkpoint_dir, snapshot, split_kind, splits, repo_ids, model_cache_dir = job.fields()
    settings = as_settings(settings)
    corpus = PremiseCorpus.from_snapshot(snapshot)
    groups = _split_groups(snapshot, split_kind, splits, repo_ids, corpus)

    retriever = index = None
    metrics: list[Metric] = []
    for repo, split, examples, report in groups:
        metrics.append(
            Metric(repo_id=repo, split=split, metric=EXAMPLES, value=float(len(examples)), count=len(examples))
        )
        metrics.append(
            Metric(
                repo_id=repo, split=split, metric=GOLD_MISSING, value=float(report.missing), count=report.annotations
            )
        )
        if not examples:
            logger.info(
                "retriever evaluation: %s %s/%s has no tactic with a gold premise in the corpus "
                "(%d tactics, %d annotated premises missing from the corpus)",
                repo,
                split_kind,
                split,
                report.tactics,
                report.missing,
            )
            continue
        if retriever is None:
            retriever = Retriever.load(checkpoint_dir, settings=settings, device=torch_device(settings))
            index = retriever.index(snapshot)
        queries = retriever.encode([e.state for e in examples])
        ranked = _rankings(queries, index.embeddings, examples, corpus, max(settings.eval_k))
        per_query: dict[str, list[float]] = {}
        m = retrieval_metrics(ranked, [set(e.gold) for e in examples], settings.eval_k, per_query)
        for name in settings.metric_names():  # with a 95% interval over queries (tasks/stats.py)
            ci = interval_fields(per_query.get(name, []), scale=100.0)
            metrics.append(
                Metric(repo_id=repo, split=split, metric=name, value=float(m[name]), count=int(m["count"]), **ci)
            )
    return metrics
