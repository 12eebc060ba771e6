"""Exact mid-epoch resume of the retriever: the data position and the random state travel
in Lightning's checkpoint.

Lightning restores weights, optimizer, scheduler and loop counters, but a plain DataLoader
restarts its epoch from the first batch and the random generators start from the seed.
`ExactResume` records, in every checkpoint, how many batches of the current epoch were
trained (so `EpochOrder` skips them) and the generators' states (torch, CUDA, Python,
numpy: dropout draws from them), and puts them back just before the first batch after a
resume. Killed after any checkpoint and resumed, training ends with the weights of an
uninterrupted run (tests/tasks/test_retriever.py). Single-process training only: under
DDP Lightning wraps the sampler and each rank has its own generators. See docs/resume.md.
"""

from __future__ import annotations

import random

import numpy as np
import torch
from pytorch_lightning.callbacks import Callback

from .pairs import EpochOrder


def rng_states() -> dict:
    np_state = np.random.get_state()
    return {
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
        "python": random.getstate(),
        # plain values, so the checkpoint loads with torch.load(weights_only=True)
        "numpy": [np_state[0], np_state[1].tolist(), int(np_state[2]), int(np_state[3]), float(np_state[4])],
    }


def set_rng_states(states: dict) -> None:
    torch.set_rng_state(states["torch"])
    if states["cuda"] and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(states["cuda"])
    version, internal, gauss = states["python"]
    random.setstate((version, tuple(internal), gauss))
    kind, keys, pos, has_gauss, cached = states["numpy"]
    np.random.set_state((kind, np.asarray(keys, dtype=np.uint32), pos, has_gauss, cached))


class ExactResume(Callback):
    """Keeps `order`'s position and the random state in checkpoints; see the module docstring.

    Must run before ModelCheckpoint in each hook (Lightning runs checkpoint callbacks last),
    so a checkpoint saved at a batch's end counts that batch.
    """

    def __init__(self, order: EpochOrder):
        self.order = order
        self.batches_done = 0
        self._restore: dict | None = None

    def on_train_epoch_start(self, trainer, pl_module) -> None:
        if self._restore is None:  # a fresh epoch; a resumed one keeps its count
            self.batches_done = 0

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        if self._restore is not None:
            set_rng_states(self._restore)
            self._restore = None

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        self.batches_done += 1

    def state_dict(self) -> dict:
        return {"epoch": self.order.epoch, "batches_done": self.batches_done, "rng": rng_states()}

    def load_state_dict(self, state_dict: dict) -> None:
        self.batches_done = self.order.resume(state_dict["epoch"], state_dict["batches_done"])
        self._restore = state_dict["rng"]
