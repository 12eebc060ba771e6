"""The GRPO family as a curriculum trainer, with rewards decided by Lean (docs/grpo.md).

`algorithms.py` the published algorithms and their math; `config.py` GRPOSettings;
`rewards.py` TRL reward functions through a Lean backend; `data.py` prompts;
`lean_trainer.py` the GRPOTrainer subclass (dynamic sampling, DPO term, advantage options);
`train.py` / `evaluate.py` the trainer's two functions (`train_grpo`, `evaluate_grpo`),
`trainer.py` its declaration; `theorem_files.py` lean-grpo's theorem files. Heavy imports
(torch, trl) happen inside functions.
"""

from .algorithms import ALGORITHMS, algorithms, canonical_algorithm, resolve_algorithm
from .config import GRPOSettings

__all__ = [
    "ALGORITHMS",
    "GRPOSettings",
    "algorithms",
    "canonical_algorithm",
    "resolve_algorithm",
]
