"""Expert iteration: proofs Dojoflow finds become what it trains on next (docs/expert-iteration.md).

- `config.py`: the `expert_iteration` section of a pipeline config.
- `pool.py`: which theorems a round searches (the train split of every repository seen so far,
  optionally its `sorry` theorems; never val or test) and one batch's search.
- `data.py`: found proofs (only those the verifier's rule calls proved, by a backend that is not a
  lower bound) as training rows, mixed with the traced data into a round's snapshot.
- `rounds.py`: per-round metrics.

Importing this package imports no torch and no Prefect.
"""
