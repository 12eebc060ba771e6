"""Dense premise retriever (bi-encoder) as a curriculum trainer, with PyTorch Lightning and EWC.

    train_retriever(settings, snapshot, split_kind, parent_dir, out_dir, work_dir, *, model_cache_dir) -> dict
    evaluate_retriever(settings, checkpoint_dir, snapshot, split_kind, splits, repo_ids, *, model_cache_dir) -> list[Metric]
    retrieve(checkpoint_dir, state, snapshot_or_corpus, k, accessible_to=...) -> [(full_name, score)]

Modules: `config` (RetrieverSettings; `layout`: its sections and the flat layout of before
them), `data` (corpus, accessibility, gold premises), `pairs` (negatives, the training
pairs and their resumable order), `model` (LightningModule, losses), `ewc` (Fisher information), `train`,
`evaluate` (R@k, MRR), `index` (premise-embedding cache, exact top-k, `Retriever` and
`retrieve` for provers), `backbone` (resolving and loading encoders), `trainer` (the
curriculum trainer declaration, docs/adding-a-trainer.md).
Importing this package does not import torch, transformers or Lightning.
"""

from .config import RetrieverSettings
from .evaluate import evaluate_retriever, retrieval_metrics
from .index import PremiseIndex, Retriever, retrieve
from .train import train_retriever

__all__ = [
    "PremiseIndex",
    "RetrieverSettings",
    "Retriever",
    "evaluate_retriever",
    "retrieval_metrics",
    "retrieve",
    "train_retriever",
]
