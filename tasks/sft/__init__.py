"""SFT tactic generator: settings (`config.py`), snapshot rows -> chat examples
(`data.py`), one curriculum training step with TRL's SFTTrainer (`train.py`),
generation (`generate.py`) and per-repository evaluation (`evaluate.py`).

Its curriculum trainer declaration is `trainer.py` (`train_sft` / `evaluate_sft`,
docs/adding-a-trainer.md); importing this package does not import torch,
transformers or TRL."""

from .config import LoraSettings, SFTEvalSettings, SFTSettings
from .evaluate import evaluate_sft
from .generate import generate_tactics, generate_tactics_batch
from .train import train_sft

__all__ = [
    "LoraSettings",
    "SFTEvalSettings",
    "SFTSettings",
    "evaluate_sft",
    "generate_tactics",
    "generate_tactics_batch",
    "train_sft",
]
