"""The retriever's training pairs: negatives, the pairs dataset, and its resumable order.

Pure Python and numpy (no torch).

- `sample_negatives`: `num_negatives` accessible, non-gold premises per (tactic, positive
  premise) pair, `num_in_file_negatives` of them from the positive premise's own file
  (ReProver's hard negatives), the rest from other accessible files; seeded.
- `RetrievalPairs`: the (tactic, positive premise) pairs with fresh negatives per epoch.
- `EpochOrder`: their shuffled order per epoch, able to start mid-epoch (docs/resume.md).
"""

from __future__ import annotations

import random

import numpy as np

from .data import PremiseCorpus, TacticExample


def _draw(pool: np.ndarray, k: int, exclude: set, rng: random.Random) -> list[int]:
    """Up to k distinct members of `pool` not in `exclude`, uniformly."""
    if k <= 0 or len(pool) == 0:
        return []
    if len(pool) <= 4 * (k + len(exclude)) + 16:
        candidates = sorted({int(x) for x in pool} - exclude)
        return rng.sample(candidates, min(k, len(candidates)))
    chosen: list[int] = []
    taken = set(exclude)
    for _ in range(50 * k):  # rejection sampling: the pool is much larger than what is excluded
        x = int(pool[rng.randrange(len(pool))])
        if x not in taken:
            taken.add(x)
            chosen.append(x)
            if len(chosen) == k:
                break
    return chosen


def sample_negatives(
    corpus: PremiseCorpus,
    example: TacticExample,
    positive: int,
    num_negatives: int,
    num_in_file: int,
    rng: random.Random,
) -> list[int]:
    """Accessible, non-gold negatives for (example, positive): in-file ones first (see module doc)."""
    acc = corpus.accessible_from(example.node, example.pos)
    gold = set(example.gold)
    same_file = corpus.node_of[acc] == corpus.node_of[positive]
    in_file_pool, other_pool = acc[same_file], acc[~same_file]
    chosen = _draw(in_file_pool, min(num_in_file, num_negatives), gold, rng)
    chosen += _draw(other_pool, num_negatives - len(chosen), gold | set(chosen), rng)
    if len(chosen) < num_negatives:  # too few premises in other files: top up from the positive's file
        chosen += _draw(in_file_pool, num_negatives - len(chosen), gold | set(chosen), rng)
    return chosen


class RetrievalPairs:
    """Map-style dataset of (tactic, positive premise) pairs with fresh negatives per epoch.

    Item i of epoch e draws its negatives from `random.Random(f"{seed}:{e}:{i}")`, so a
    resumed run samples exactly what the interrupted one would have.
    """

    def __init__(
        self,
        corpus: PremiseCorpus,
        examples: list[TacticExample],
        num_negatives: int,
        num_in_file_negatives: int,
        seed: int,
    ):
        self.corpus = corpus
        self.examples = examples
        self.pairs = [(e, p) for e, ex in enumerate(examples) for p in ex.gold]
        self.num_negatives = num_negatives
        self.num_in_file_negatives = num_in_file_negatives
        self.seed = seed
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return len(self.pairs)

    def __getitem__(self, i: int) -> dict:
        e, positive = self.pairs[i]
        ex = self.examples[e]
        rng = random.Random(f"{self.seed}:{self.epoch}:{i}")
        negatives = sample_negatives(self.corpus, ex, positive, self.num_negatives, self.num_in_file_negatives, rng)
        return {"context": ex.state, "premises": [positive, *negatives], "gold": ex.gold}


class EpochOrder:
    """The shuffled order of the training pairs, a function of (seed, epoch) only, that can
    start in the middle of an epoch: what makes a resumed run see exactly the batches the
    interrupted one would have (docs/resume.md).

    A DataLoader `sampler`. Lightning calls `set_epoch` before each epoch (it also moves the
    dataset to that epoch's negatives); `resume(epoch, batches_done)` makes the next pass
    begin at that epoch's batch `batches_done`. `len` stays the full epoch, as Lightning
    counts the batches of a resumed epoch from its restored progress.
    """

    def __init__(self, pairs: RetrievalPairs, batch_size: int, seed: int, rank: int = 0, world: int = 1):
        self.pairs = pairs
        self.batch_size = batch_size
        self.seed = seed
        self.epoch = 0
        self._skip_batches = 0
        # Under DDP (world > 1) rank r trains the epoch's batches r, r + world, ...: one optimizer
        # step of `world` processes is `world` consecutive batches, as one process accumulating
        # `world` batches would train them (tests/tasks/test_launch.py). Each rank gets the same
        # number of batches (a remainder of fewer than `world` batches is left out), or DDP would wait.
        self.rank, self.world = rank, world

    def batches_per_epoch(self) -> int:
        """Batches this process trains per epoch."""
        total = -(-len(self.pairs) // self.batch_size)
        return total if self.world == 1 else total // self.world

    def set_epoch(self, epoch: int) -> None:
        if epoch != self.epoch:
            self._skip_batches = 0
        self.epoch = epoch
        self.pairs.set_epoch(epoch)

    def resume(self, epoch: int, batches_done: int) -> int:
        """Continue after `batches_done` batches of `epoch` (a whole epoch done: the next one).
        Returns the number of batches the next pass skips."""
        if batches_done >= self.batches_per_epoch():
            epoch, batches_done = epoch + 1, 0
        self.set_epoch(epoch)
        self._skip_batches = batches_done
        return batches_done

    def order(self, epoch: int) -> list[int]:
        order = list(range(len(self.pairs)))
        random.Random(f"{self.seed}:order:{epoch}").shuffle(order)
        return order

    def __iter__(self):
        order = self.order(self.epoch)
        if self.world > 1:
            b = self.batch_size
            mine = range(self.rank, self.batches_per_epoch() * self.world, self.world)
            order = [i for k in mine for i in order[k * b : (k + 1) * b]]
        start, self._skip_batches = self._skip_batches * self.batch_size, 0
        return iter(order[start:])

    def __len__(self) -> int:
        return len(self.pairs) if self.world == 1 else self.batches_per_epoch() * self.batch_size
