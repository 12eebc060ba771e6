"""Dense premise retriever (bi-encoder) as a curriculum trainer, with PyTorch Lightning and EWC.

    train_retriever(settings, snapshot, split_kind, parent_dir, out_dir, work_dir) -> dict
    evaluate_retriever(settings, checkpoint_dir, snapshot, split_kind, splits, repo_ids) -> list[Metric]

Modules: `config` (RetrieverSettings), `data` (corpus, accessibility, gold premises,
negatives), `model` (LightningModule, losses), `ewc` (Fisher information), `train`,
`evaluate` (R@k, MRR, premise-embedding cache), `backbone` (resolving and loading encoders).
Importing this package does not import torch, transformers or Lightning.
"""

from .config import RetrieverSettings
from .evaluate import evaluate_retriever, retrieval_metrics
from .train import train_retriever

__all__ = ["RetrieverSettings", "evaluate_retriever", "retrieval_metrics", "train_retriever"]
