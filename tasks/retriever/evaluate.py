"""`evaluate_retriever`: R@k and MRR of a retriever checkpoint, per repository and split.

Implements the `evaluate` half of `tasks/trainers/base.py`:

    evaluate_retriever(settings, checkpoint_dir, snapshot, split_kind, splits, repo_ids) -> list[Metric]

Metrics (ANCHORS.md), over the tactics that have at least one gold premise in the corpus,
ranking only the premises accessible to the tactic's theorem:
R@k = |top-k ∩ gold| / |gold|, MRR = 1 / rank of the first gold premise (0 if none is
accessible), each ×100 and averaged over tactics. Rows are named `R@1`, `R@10` (one per
`settings.eval_k`) and `MRR`; a (repository, split) with no such tactic gives no rows.

Premise embeddings are computed once per (checkpoint weights, premise corpus,
max_seq_len) and cached as safetensors under `settings.embedding_cache_dir`
(default `<store_root>/cache/retriever_embeddings`); a second evaluation of the same
checkpoint on the same corpus reads them back instead of re-encoding.
"""

from __future__ import annotations

import logging
from collections.abc import Hashable, Sequence
from pathlib import Path

import numpy as np

from storage import atomic
from storage.snapshot_ref import SnapshotRef
from tasks.trainers.base import Metric

from .backbone import load_encoder, weights_sha256
from .config import RetrieverSettings
from .data import PremiseCorpus, build_examples
from .runtime import as_settings, encode_texts, torch_device

logger = logging.getLogger(__name__)

QUERY_CHUNK = 64  # goal states scored against the whole corpus per matrix product


def retrieval_metrics(ranked_ids: Sequence[Sequence[Hashable]], gold: Sequence[set], ks: Sequence[int] = (1, 10)) -> dict:
    """R@k for k in `ks` and MRR, ×100, averaged over the queries with a non-empty gold set.

    `ranked_ids[i]` is query i's ranking, best first (it may be cut anywhere after the
    first gold premise and after max(ks)); `gold[i]` its gold ids. Returns the metrics
    and `count`, the number of queries averaged; `{"count": 0}` when there are none.

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
            sums[k] += len(set(ranked[:k]) & g) / len(g)
        for rank, pid in enumerate(ranked, start=1):
            if pid in g:
                rr += 1.0 / rank
                break
    if n == 0:
        return {"count": 0}
    out = {f"R@{k}": 100.0 * sums[k] / n for k in ks}
    out["MRR"] = 100.0 * rr / n
    out["count"] = n
    return out


def embedding_cache_path(settings: RetrieverSettings, snapshot: SnapshotRef, weights_hash: str, corpus_hash: str) -> Path:
    root = Path(settings.embedding_cache_dir) if settings.embedding_cache_dir else (
        Path(snapshot.store_root) / "cache" / "retriever_embeddings")
    return root / f"{weights_hash[:24]}-{corpus_hash[:24]}-len{settings.max_seq_len}.safetensors"


def premise_embeddings(encoder, tokenizer, corpus: PremiseCorpus, settings: RetrieverSettings, weights_hash: str,
                       cache_path: Path, device):
    """(embeddings of `corpus.unique_texts()` [U, H] float32, cache hit?) read from or written to `cache_path`."""
    from safetensors import safe_open
    from safetensors.torch import save

    texts, _ = corpus.unique_texts()
    corpus_hash = corpus.content_hash()
    if cache_path.exists():
        try:
            with safe_open(str(cache_path), framework="pt") as f:
                meta = f.metadata() or {}
                emb = f.get_tensor("embeddings")
            if (meta.get("weights_sha256") == weights_hash and meta.get("corpus_sha256") == corpus_hash
                    and emb.shape[0] == len(texts)):
                logger.info("premise embeddings: cache hit %s", cache_path)
                return emb, True
            logger.warning("premise embedding cache %s does not match this checkpoint and corpus; re-encoding", cache_path)
        except Exception as e:  # a damaged cache file is recomputed, never trusted
            logger.warning("premise embedding cache %s is unreadable (%s); re-encoding", cache_path, e)
    logger.info("premise embeddings: encoding %d distinct premises", len(texts))
    emb = encode_texts(encoder, tokenizer, texts, settings, device).contiguous()
    atomic.write_bytes(cache_path, save({"embeddings": emb}, metadata={
        "weights_sha256": weights_hash, "corpus_sha256": corpus_hash, "max_seq_len": str(settings.max_seq_len),
        "count": str(len(texts)),
    }))
    return emb, False


def _rankings(query_emb, prem_emb, examples, corpus: PremiseCorpus, max_k: int) -> list[list[int]]:
    """Each example's accessible premises by score, cut after max_k and after the first gold one."""
    out = []
    for start in range(0, len(examples), QUERY_CHUNK):
        chunk = examples[start:start + QUERY_CHUNK]
        scores = (query_emb[start:start + len(chunk)] @ prem_emb.T).numpy()
        for row, ex in zip(scores, chunk):
            acc = corpus.accessible_from(ex.node, ex.pos)
            if len(acc) == 0:
                out.append([])
                continue
            ranked = acc[np.argsort(-row[acc], kind="stable")]
            hits = np.flatnonzero(np.isin(ranked, np.asarray(ex.gold)))
            cut = max(max_k, int(hits[0]) + 1) if len(hits) else max_k
            out.append(ranked[:cut].tolist())
    return out


def evaluate_retriever(settings, checkpoint_dir: Path, snapshot: SnapshotRef, split_kind: str,
                       splits: list[str], repo_ids: list[str]) -> list[Metric]:
    """Metric rows (R@k…, MRR) per repository in `repo_ids` and split in `splits`; see module doc."""
    import torch

    settings = as_settings(settings)
    checkpoint_dir = Path(checkpoint_dir)
    corpus = PremiseCorpus.from_snapshot(snapshot)
    work = []
    for split in splits:
        examples, _ = build_examples(snapshot, split_kind, split, corpus, repo_ids)
        for repo in repo_ids:
            mine = [e for e in examples if e.repo_id == repo]
            if mine:
                work.append((repo, split, mine))
    if not work:
        return []

    device = torch_device(settings)
    encoder, tokenizer = load_encoder(str(checkpoint_dir))
    encoder.eval().to(device)
    w_hash = weights_sha256(checkpoint_dir)
    cache = embedding_cache_path(settings, snapshot, w_hash, corpus.content_hash())
    unique_emb, _ = premise_embeddings(encoder, tokenizer, corpus, settings, w_hash, cache, device)
    prem_emb = unique_emb[torch.from_numpy(corpus.unique_texts()[1])]

    metrics: list[Metric] = []
    for repo, split, examples in work:
        queries = encode_texts(encoder, tokenizer, [e.state for e in examples], settings, device)
        ranked = _rankings(queries, prem_emb, examples, corpus, max(settings.eval_k))
        m = retrieval_metrics(ranked, [set(e.gold) for e in examples], settings.eval_k)
        for name in settings.metric_names():
            metrics.append(Metric(repo_id=repo, split=split, metric=name, value=float(m[name]), count=int(m["count"])))
    return metrics
