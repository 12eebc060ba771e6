"""Which trainers exist: name -> settings class, train and evaluate functions.

Entries are import strings so that naming a trainer does not import torch.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass


@dataclass(frozen=True)
class TrainerSpec:
    name: str
    settings: str  # "module:Class"
    train: str  # "module:function"
    evaluate: str

    def load(self, attr: str):
        module, _, name = getattr(self, attr).partition(":")
        return getattr(importlib.import_module(module), name)


TRAINERS: dict[str, TrainerSpec] = {
    "sft": TrainerSpec("sft", "tasks.sft.config:SFTSettings", "tasks.sft.train:train_sft", "tasks.sft.evaluate:evaluate_sft"),
    "retriever": TrainerSpec("retriever", "tasks.retriever.config:RetrieverSettings",
                             "tasks.retriever.train:train_retriever", "tasks.retriever.evaluate:evaluate_retriever"),
    "progress": TrainerSpec("progress", "tasks.progress.config:ProgressSettings",
                            "tasks.progress.train:train_progress", "tasks.progress.evaluate:evaluate_progress"),
}
