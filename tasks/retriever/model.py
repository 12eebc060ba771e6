"""The bi-encoder as a LightningModule: encoding, LeanDojo's MSE loss or InfoNCE, and EWC.

- Encoding: the encoder's last hidden states, mean-pooled over the attention mask and
  L2-normalised, so a premise's score for a goal is their cosine similarity.
- Batches (built by `Collator`): B goal states, and as premises the B positives followed
  by every example's negatives; the label matrix [B, P] is 1 where a batch premise is a
  gold premise of the goal, so each goal's negatives include the other examples'
  premises (in-batch negatives), as in ReProver.
- Loss: 'mse' (LeanDojo): mean of (cos(goal_i, premise_j) - label_ij)^2;
  'infonce': cross-entropy of goal i over the batch's premises at a temperature, its
  own positive the target and its other gold premises masked out.
- EWC: `ewc_lambda * sum_p F_p * (theta_p - theta*_p)^2` with F the parent step's
  diagonal Fisher information and theta* the parent's weights (`tasks.retriever.ewc`).

This module imports torch and Lightning at the top; `train.py` and `evaluate.py` import
it inside their functions, so importing `tasks.retriever` stays light.
"""

from __future__ import annotations

import pytorch_lightning as pl
import torch
import torch.nn.functional as F
from torch import nn


def mean_pool(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of `hidden` [B, T, H] over the positions where `mask` [B, T] is 1."""
    m = mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * m).sum(dim=1) / m.sum(dim=1).clamp(min=1e-9)


def embed(encoder: nn.Module, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """L2-normalised mean-pooled embeddings [B, H] (float32)."""
    out = encoder(input_ids=input_ids, attention_mask=attention_mask)
    pooled = mean_pool(out.last_hidden_state, attention_mask)
    return F.normalize(pooled.float(), dim=-1)


def retrieval_loss(
    ctx: torch.Tensor, prem: torch.Tensor, labels: torch.Tensor, kind: str, temperature: float
) -> torch.Tensor:
    """The loss of one batch: `ctx` [B, H], `prem` [P, H] (first B: the positives), `labels` [B, P]."""
    sim = ctx @ prem.t()
    if kind == "mse":
        return F.mse_loss(sim, labels.to(sim.dtype))
    if kind == "infonce":
        b = ctx.shape[0]
        own = torch.zeros_like(labels, dtype=torch.bool)
        own[torch.arange(b), torch.arange(b)] = True
        logits = (sim / temperature).masked_fill(labels.bool() & ~own, float("-inf"))
        return F.cross_entropy(logits, torch.arange(b, device=sim.device))
    raise ValueError(f"unknown loss {kind!r}: use 'mse' or 'infonce'")


class EWCAnchor(nn.Module):
    """The parent's Fisher information and weights, as buffers that follow the module's device.

    Buffers are not persistent: they are reloaded from the parent checkpoint on every
    start, so a Lightning checkpoint does not carry a second copy of the model.
    """

    def __init__(self, fisher: dict[str, torch.Tensor], anchor: dict[str, torch.Tensor]):
        super().__init__()
        self.names = sorted(fisher)
        for i, name in enumerate(self.names):
            self.register_buffer(f"fisher_{i}", fisher[name].detach().float().clone(), persistent=False)
            self.register_buffer(f"anchor_{i}", anchor[name].detach().float().clone(), persistent=False)

    def penalty(self, named_params: dict[str, torch.Tensor]) -> torch.Tensor:
        """sum_p F_p * (theta_p - theta*_p)^2 over the anchored parameters."""
        total = None
        for i, name in enumerate(self.names):
            theta = named_params[name]
            term = (getattr(self, f"fisher_{i}") * (theta.float() - getattr(self, f"anchor_{i}")) ** 2).sum()
            total = term if total is None else total + term
        if total is None:
            return torch.zeros(())
        return total


class RetrieverModule(pl.LightningModule):
    """Encoder + loss + optional EWC penalty; the encoder is the only trained part."""

    def __init__(
        self,
        encoder: nn.Module,
        *,
        loss: str = "mse",
        temperature: float = 0.05,
        lr: float = 1e-4,
        weight_decay: float = 0.0,
        warmup_steps: int = 0,
        ewc_lambda: float = 0.0,
        ewc: EWCAnchor | None = None,
    ):
        super().__init__()
        self.encoder = encoder
        self.loss_kind = loss
        self.temperature = temperature
        self.lr = lr
        self.weight_decay = weight_decay
        self.warmup_steps = warmup_steps
        self.ewc_lambda = ewc_lambda
        self.ewc = ewc if (ewc is not None and ewc_lambda > 0) else None
        self.last_loss: float | None = None
        self.last_penalty: float | None = None
        self.loss_sum = 0.0
        self.loss_count = 0

    def encode(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        return embed(self.encoder, input_ids, attention_mask)

    def task_loss(self, batch: dict) -> torch.Tensor:
        ctx = self.encode(batch["context_ids"], batch["context_mask"])
        prem = self.encode(batch["premise_ids"], batch["premise_mask"])
        return retrieval_loss(ctx, prem, batch["labels"], self.loss_kind, self.temperature)

    def ewc_penalty(self) -> torch.Tensor:
        if self.ewc is None:
            return torch.zeros((), device=self.device)
        return self.ewc.penalty(dict(self.encoder.named_parameters()))

    def on_train_epoch_start(self) -> None:
        self.encoder.train()  # from_pretrained and evaluation leave it in eval mode

    def training_step(self, batch: dict, batch_idx: int) -> torch.Tensor:
        loss = self.task_loss(batch)
        total = loss
        if self.ewc is not None:
            penalty = self.ewc_penalty()
            total = loss + self.ewc_lambda * penalty
            self.last_penalty = float(penalty.detach())
            self.log("train/ewc_penalty", penalty.detach(), batch_size=batch["labels"].shape[0])
        self.log("train/loss", loss.detach(), prog_bar=True, batch_size=batch["labels"].shape[0])
        self.last_loss = float(loss.detach())
        self.loss_sum += self.last_loss
        self.loss_count += 1
        return total

    def configure_optimizers(self):
        params = [p for p in self.encoder.parameters() if p.requires_grad]
        opt = torch.optim.AdamW(params, lr=self.lr, weight_decay=self.weight_decay)
        if self.warmup_steps <= 0:
            return opt
        warm = self.warmup_steps
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: min(1.0, (step + 1) / warm))
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}


class Collator:
    """Tokenises a list of `RetrievalPairs` items into one batch (see module doc)."""

    def __init__(self, tokenizer, premise_texts: list[str], max_seq_len: int):
        self.tokenizer = tokenizer
        self.premise_texts = premise_texts
        self.max_seq_len = max_seq_len

    def _tok(self, texts: list[str]) -> dict:
        return self.tokenizer(texts, padding=True, truncation=True, max_length=self.max_seq_len, return_tensors="pt")

    def __call__(self, items: list[dict]) -> dict:
        positives = [it["premises"][0] for it in items]
        negatives = [p for it in items for p in it["premises"][1:]]
        batch_premises = positives + negatives
        golds = [set(it["gold"]) for it in items]
        labels = torch.tensor([[1.0 if p in g else 0.0 for p in batch_premises] for g in golds], dtype=torch.float32)
        ctx = self._tok([it["context"] for it in items])
        prem = self._tok([self.premise_texts[p] for p in batch_premises])
        return {
            "context_ids": ctx["input_ids"],
            "context_mask": ctx["attention_mask"],
            "premise_ids": prem["input_ids"],
            "premise_mask": prem["attention_mask"],
            "labels": labels,
        }
