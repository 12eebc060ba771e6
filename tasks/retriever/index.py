"""Using a trained retriever: cached premise embeddings, exact top-k search, and `retrieve`.

A prover loads a checkpoint once, indexes a premise corpus once (reading the premise
embeddings that evaluation cached, or encoding them once and caching them), then asks
for the best premises of each goal state:

    from tasks.retriever.index import Retriever, retrieve
    retriever = Retriever.load("checkpoints/retriever-step3")
    index = retriever.index(snapshot)            # a SnapshotRef or a PremiseCorpus
    retriever.retrieve("n : ℕ\\n⊢ n + 0 = n", index, k=10,
                       accessible_to=("<repo_id>", "Foo/Bar.lean", (12, 0)))
    # -> [("Nat.add_zero", 0.83), ...]: (premise full_name, cosine score), best first

    retrieve(checkpoint_dir, state, snapshot, k=10, accessible_to=...)   # one call: loads all of the above

`accessible_to` is the theorem being proved, `(repo_id, file_path, (line, column))` of
its start: only premises accessible there are ranked (LeanDojo's rule, docs/architecture.md;
`PremiseCorpus.accessible`); None ranks the whole corpus.

Premise embeddings are cached as safetensors per (checkpoint weights, corpus content,
max_seq_len) under `settings.embedding_cache_dir`, else `<store_root>/cache/retriever_embeddings`
for a snapshot's corpus: the same files `evaluate_retriever` writes and reads.

Search (`search_embeddings`, the path evaluation and `retrieve` share, and the one
`benchmarks/bench_retrieval.py` times): one BLAS matrix-vector product over the cached
embeddings, then an exact top-k by partial selection (`top_k`), never a full sort.
torch and transformers are imported inside functions.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from storage import atomic
from storage.errors import InputError

from .config import RetrieverSettings
from .data import PremiseCorpus
from .runtime import as_settings, encode_texts, read_retriever_json

logger = logging.getLogger(__name__)


# -- exact top-k ------------------------------------------------------------------------------


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Positions of the `k` highest `scores`, best first; equal scores keep position order.

    The same order as a stable descending sort, cut at k, in O(N + k log k): the k-th
    largest value comes from a partial selection (`torch.topk`), then one pass collects
    what beats it and the first of its ties.

    >>> top_k(np.array([0.1, 0.9, 0.5, 0.9], dtype=np.float32), 3).tolist()
    [1, 3, 2]
    """
    n = int(scores.shape[0])
    if k <= 0 or n == 0:
        return np.zeros(0, dtype=np.int64)
    if k >= n:
        return np.argsort(-scores, kind="stable")
    import torch

    kth = torch.topk(torch.from_numpy(np.ascontiguousarray(scores)), k, sorted=False).values.min().item()
    strict = np.flatnonzero(scores > kth)
    ties = np.flatnonzero(scores == kth)[: k - len(strict)]
    chosen = np.concatenate([strict, ties])
    return chosen[np.lexsort((chosen, -scores[chosen]))]


def first_rank(scores: np.ndarray, positions: np.ndarray) -> tuple[int, int] | None:
    """(1-based rank in `top_k`'s order, position) of the best of `positions`; None if there are none.

    >>> first_rank(np.array([0.1, 0.9, 0.5, 0.9], dtype=np.float32), np.array([0, 3]))
    (2, 3)
    """
    if len(positions) == 0:
        return None
    positions = np.asarray(positions)
    best = int(positions[np.lexsort((positions, -scores[positions]))[0]])
    value = scores[best]
    return 1 + int(np.count_nonzero(scores > value)) + int(np.count_nonzero(scores[:best] == value)), best


def search_embeddings(
    embeddings: np.ndarray, query: np.ndarray, k: int, candidates: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(row indices, scores) of the `k` rows of `embeddings` [N, H] scoring highest against `query` [H].

    Scores are dot products (cosines for L2-normalised embeddings). `candidates`, if
    given, restricts the ranking to those rows (e.g. the accessible premises).
    """
    if embeddings.shape[0] == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
    scores = embeddings @ query
    if candidates is None:
        pos = top_k(scores, k)
        return pos, scores[pos]
    candidates = np.asarray(candidates, dtype=np.int64)
    sub = scores[candidates]
    pos = top_k(sub, k)
    return candidates[pos], sub[pos]


# -- premise embeddings and their cache ------------------------------------------------------------


def embedding_cache_root(settings: RetrieverSettings, store_root: str | Path | None) -> Path | None:
    """Where premise embeddings are cached: the setting, else `<store_root>/cache/retriever_embeddings`."""
    if settings.embedding_cache_dir:
        return Path(settings.embedding_cache_dir)
    if store_root is not None:
        return Path(store_root) / "cache" / "retriever_embeddings"
    return None


def cache_file(root: Path, settings: RetrieverSettings, weights_hash: str, corpus_hash: str) -> Path:
    return Path(root) / f"{weights_hash[:24]}-{corpus_hash[:24]}-len{settings.max_seq_len}.safetensors"


def premise_embeddings(
    encoder,
    tokenizer,
    corpus: PremiseCorpus,
    settings: RetrieverSettings,
    weights_hash: str,
    cache_path: Path | None,
    device,
):
    """(embeddings of `corpus.unique_texts()` [U, H] float32 tensor, cache hit?).

    Read from `cache_path` when it holds embeddings of these weights and this corpus,
    else encoded and written there atomically (not cached when `cache_path` is None).
    """
    from safetensors import safe_open
    from safetensors.torch import save

    texts, _ = corpus.unique_texts()
    corpus_hash = corpus.content_hash()
    if cache_path is not None and cache_path.exists():
        try:
            with safe_open(str(cache_path), framework="pt") as f:
                meta = f.metadata() or {}
                emb = f.get_tensor("embeddings")
            if (
                meta.get("weights_sha256") == weights_hash
                and meta.get("corpus_sha256") == corpus_hash
                and emb.shape[0] == len(texts)
            ):
                logger.info("premise embeddings: cache hit %s", cache_path)
                return emb, True
            logger.warning(
                "premise embedding cache %s does not match this checkpoint and corpus; re-encoding", cache_path
            )
        except Exception as e:  # a damaged cache file is recomputed, never trusted
            logger.warning("premise embedding cache %s is unreadable (%s); re-encoding", cache_path, e)
    logger.info("premise embeddings: encoding %d distinct premises", len(texts))
    emb = encode_texts(encoder, tokenizer, texts, settings, device).contiguous()
    if cache_path is not None:
        atomic.write_bytes(
            cache_path,
            save(
                {"embeddings": emb},
                metadata={
                    "weights_sha256": weights_hash,
                    "corpus_sha256": corpus_hash,
                    "max_seq_len": str(settings.max_seq_len),
                    "count": str(len(texts)),
                },
            ),
        )
    return emb, False


@dataclass(frozen=True)
class PremiseIndex:
    """A premise corpus with one embedding per premise, ready to search. Read-only; safe to share."""

    corpus: PremiseCorpus
    embeddings: np.ndarray  # [len(corpus), H] float32, C-contiguous, L2-normalised rows
    weights_sha256: str  # the checkpoint the embeddings belong to
    cache_path: str | None  # the cache file read or written (None: not cached)
    cache_hit: bool  # True when the embeddings were read from the cache, not encoded

    def candidates(self, accessible_to) -> np.ndarray | None:
        """Premise indices accessible to the theorem `accessible_to` (see module doc); None: all."""
        if accessible_to is None:
            return None
        try:
            repo_id, file_path, start = accessible_to
        except (TypeError, ValueError):
            raise InputError(
                "accessible_to",
                f"{accessible_to!r} is not (repo_id, file_path, (line, column))",
                "Pass the theorem's repository id, file path and start position, or None for all premises.",
            ) from None
        return self.corpus.accessible(repo_id, file_path, start)

    def search(self, query: np.ndarray, k: int, accessible_to=None) -> list[tuple[str, float]]:
        """(full_name, score) of the `k` best premises for a query embedding [H], best first."""
        idx, scores = search_embeddings(
            self.embeddings, np.asarray(query, dtype=np.float32), k, self.candidates(accessible_to)
        )
        return [(self.corpus.full_names[int(i)], float(s)) for i, s in zip(idx, scores)]


# -- a loaded checkpoint ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Retriever:
    """A loaded retriever checkpoint (encoder, tokenizer, settings). Holds no per-call state."""

    encoder: Any
    tokenizer: Any
    settings: RetrieverSettings
    device: Any
    weights_sha256: str
    checkpoint_dir: str

    @classmethod
    def load(cls, checkpoint_dir: str | Path, settings=None, device=None) -> "Retriever":
        """Load a folder written by `train_retriever` (or any save_pretrained encoder folder).

        `settings` defaults to those saved in its `dojoflow_model.json` (max_seq_len, batch
        sizes, cache folder); `device` to CUDA when present, else CPU.
        """
        import torch

        from .backbone import load_encoder, weights_sha256
        from .errors import CheckpointError

        checkpoint_dir = Path(checkpoint_dir)
        if not (checkpoint_dir / "config.json").is_file():
            raise CheckpointError(checkpoint_dir, "it holds no config.json (no saved encoder)")
        if settings is None:
            saved = (read_retriever_json(checkpoint_dir) or {}).get("settings") or {}
            settings = RetrieverSettings.from_stored(saved)  # an older checkpoint's layout too
        settings = as_settings(settings)
        if device is None:
            device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        device = torch.device(device)
        encoder, tokenizer = load_encoder(str(checkpoint_dir))
        encoder.eval().to(device)
        return cls(
            encoder=encoder,
            tokenizer=tokenizer,
            settings=settings,
            device=device,
            weights_sha256=weights_sha256(checkpoint_dir),
            checkpoint_dir=str(checkpoint_dir),
        )

    def encode(self, texts: list[str]) -> np.ndarray:
        """L2-normalised embeddings [len(texts), H] (float32 numpy) of goal states or any texts."""
        return encode_texts(self.encoder, self.tokenizer, list(texts), self.settings, self.device).numpy()

    def index(self, premises, cache_dir: str | Path | None = None) -> PremiseIndex:
        """A `PremiseIndex` of `premises` (a SnapshotRef or a PremiseCorpus).

        Embeddings come from the cache (`cache_dir`, else the settings' folder, else the
        snapshot store's `cache/retriever_embeddings`) or are encoded once and cached there.
        A bare PremiseCorpus with no cache folder configured is encoded and not cached.
        """
        if isinstance(premises, PremiseCorpus):
            corpus, store_root = premises, None
        elif hasattr(premises, "premises") and hasattr(premises, "store_root"):
            corpus, store_root = PremiseCorpus.from_snapshot(premises), premises.store_root
        else:
            raise InputError(
                "premises",
                f"a {type(premises).__name__} is neither a SnapshotRef nor a PremiseCorpus",
                "Pass the snapshot the premises come from, or a tasks.retriever.data.PremiseCorpus.",
            )
        root = Path(cache_dir) if cache_dir is not None else embedding_cache_root(self.settings, store_root)
        path = cache_file(root, self.settings, self.weights_sha256, corpus.content_hash()) if root else None
        unique, hit = premise_embeddings(
            self.encoder, self.tokenizer, corpus, self.settings, self.weights_sha256, path, self.device
        )
        emb = np.ascontiguousarray(unique.numpy()[corpus.unique_texts()[1]], dtype=np.float32)
        return PremiseIndex(
            corpus=corpus,
            embeddings=emb,
            weights_sha256=self.weights_sha256,
            cache_path=str(path) if path else None,
            cache_hit=hit,
        )

    def retrieve(self, state: str, index: PremiseIndex, k: int = 10, accessible_to=None) -> list[tuple[str, float]]:
        """The `k` best premises of `index` for goal state `state`: [(full_name, score)], best first."""
        if index.weights_sha256 != self.weights_sha256:
            raise InputError(
                "index",
                f"its embeddings belong to weights {index.weights_sha256[:16]}…, not to this checkpoint's "
                f"{self.weights_sha256[:16]}…",
                "Build the index with this Retriever (`retriever.index(...)`).",
            )
        return index.search(self.encode([state])[0], k, accessible_to)


def retrieve(
    checkpoint_dir: str | Path,
    state: str,
    premises,
    k: int = 10,
    accessible_to=None,
    settings=None,
    cache_dir: str | Path | None = None,
) -> list[tuple[str, float]]:
    """One call: load the checkpoint, index `premises` (cached embeddings), return the `k` best.

    `premises` is a SnapshotRef or a PremiseCorpus; see the module doc for
    `accessible_to`. Each call loads the model again: a prover that retrieves for many
    goals keeps a `Retriever` and a `PremiseIndex` instead.
    """
    retriever = Retriever.load(checkpoint_dir, settings=settings)
    return retriever.retrieve(state, retriever.index(premises, cache_dir), k, accessible_to)
