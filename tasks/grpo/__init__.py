"""The GRPO family as a curriculum trainer, with rewards decided by Lean (docs/grpo.md).

`algorithms.py` the published algorithms and their math; `config.py` GRPOSettings;
`rewards.py` TRL reward functions through a Lean backend; `data.py` prompts;
`lean_trainer.py` the GRPOTrainer subclass (dynamic sampling, DPO term, advantage options);
`train.py` / `evaluate.py` the trainer's two functions, `trainer.py` its declaration; `theorem_files.py` lean-grpo's
theorem files. Heavy imports (torch, trl) happen inside functions.
"""

from .algorithms import ALGORITHMS, algorithms, canonical_algorithm, resolve_algorithm
from .config import GRPOSettings


def train_grpo(*args, **kwargs):
    from .train import train_grpo as _train

    return _train(*args, **kwargs)


def evaluate_grpo(*args, **kwargs):
    from .evaluate import evaluate_grpo as _evaluate

    return _evaluate(*args, **kwargs)


__all__ = [
    "ALGORITHMS",
    "GRPOSettings",
    "algorithms",
    "canonical_algorithm",
    "evaluate_grpo",
    "resolve_algorithm",
    "train_grpo",
]
