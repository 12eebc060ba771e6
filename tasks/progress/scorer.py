"""`ProgressScorer`: a trained progress checkpoint, ready to score candidate tactics.

A prover loads it once and asks, for a goal and the tactics applied so far, how
many steps each candidate tactic leaves (the candidate included, see
`tasks.progress.data`); fewer is better.

    scorer = ProgressScorer.load("checkpoints/progress-step3")
    scorer.score("n : ℕ\\n⊢ n + 0 = n", ["intro n"], ["simp", "rfl", "omega"])   # [1.3, 1.1, 1.2]
    scorer.rank("n : ℕ\\n⊢ n + 0 = n", ["intro n"], ["simp", "rfl", "omega"])    # best first
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tasks.models.loading import load_tokenizer

from .data import ProgressExample, join_prefix
from .model import encode_rows, features, load_regression_model, read_meta


@dataclass(frozen=True)
class ProgressScorer:
    """A loaded progress model. Holds no per-call state; safe to share."""

    model: Any
    tokenizer: Any
    max_seq_len: int
    device: str
    batch_size: int = 32
    checkpoint_dir: str = ""

    @classmethod
    def load(
        cls, checkpoint_dir: str | Path, device: str | None = None, batch_size: int = 32, max_seq_len: int | None = None
    ) -> "ProgressScorer":
        """Load a checkpoint written by `train_progress` (its `dojoflow_model.json` is required).

        `device` defaults to CUDA when present; `max_seq_len` to the training length.
        """
        import torch

        meta = read_meta(checkpoint_dir)
        device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        tokenizer = load_tokenizer(checkpoint_dir)
        model = load_regression_model(checkpoint_dir, tokenizer, from_base=False).to(device)
        model.eval()
        return cls(
            model=model,
            tokenizer=tokenizer,
            max_seq_len=int(max_seq_len or meta["max_seq_len"]),
            device=device,
            batch_size=batch_size,
            checkpoint_dir=str(checkpoint_dir),
        )

    def predict(self, rows: Sequence[ProgressExample | tuple[str, str, str]]) -> list[float]:
        """Predicted steps remaining for each row ((goal, prefix, tactic) or a ProgressExample)."""
        import torch

        triples = [(r.goal, r.prefix, r.tactic) if isinstance(r, ProgressExample) else tuple(r) for r in rows]
        ids, _ = encode_rows(self.tokenizer, triples, self.max_seq_len)
        out: list[float] = []
        with torch.inference_mode():
            for start in range(0, len(ids), self.batch_size):
                batch = self.tokenizer.pad(
                    [features(x) for x in ids[start : start + self.batch_size]], return_tensors="pt"
                )
                batch = {k: v.to(self.device) for k, v in batch.items()}
                logits = self.model(**batch).logits
                out.extend(logits[:, 0].float().cpu().tolist())
        return out

    def score(self, goal: str, prefix: str | Sequence[str], candidates: Sequence[str]) -> list[float]:
        """Predicted steps remaining after choosing each candidate (lower is better).

        `prefix` is the proof so far: a string, or the list of tactics applied.
        """
        prefix_text = prefix if isinstance(prefix, str) else join_prefix(prefix)
        return self.predict([(goal, prefix_text, c) for c in candidates])

    def rank(self, goal: str, prefix: str | Sequence[str], candidates: Sequence[str]) -> list[tuple[str, float]]:
        """Candidates with their scores, fewest predicted steps first (ties keep input order)."""
        scores = self.score(goal, prefix, candidates)
        order = sorted(range(len(candidates)), key=lambda i: scores[i])
        return [(candidates[i], scores[i]) for i in order]
