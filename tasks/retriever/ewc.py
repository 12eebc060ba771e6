"""Elastic Weight Consolidation that does something: the Fisher is computed, saved, checked, used.

LeanDojo-v2 has an EWC term in its loss but never computes the Fisher information,
so the term is always zero (docs/architecture.md). Here, after each curriculum step:

1. `compute_fisher`: the diagonal empirical Fisher information, for every encoder
   parameter, at the weights just trained (dropout off): the mean over up to
   `fisher_examples` training examples of the squared gradient of each example's own
   loss, F = (1/N) sum_i (d loss_i / d theta)^2. Each example (a goal state, its
   positive premise and its negatives) is a micro-batch of one, so no in-batch
   negatives enter its loss. Squaring the gradient of a batch-mean loss instead
   would square a mean, (1/B sum_i g_i)^2, which for examples whose gradients point
   different ways is about B times smaller, and EWC would do almost nothing.
2. `save_fisher`: `fisher.safetensors` beside the saved model, and a `fisher.json`
   sidecar recording the sha256 of the model's weight files and of the Fisher file.
   The weights themselves are theta*, the point the next step is anchored to.
3. `load_fisher` (next step): refuses, with `FisherMismatchError`, a Fisher whose
   recorded weights hash differs from the checkpoint's weights, whose bytes changed,
   whose format is another estimator's, or whose tensors do not match the model's
   parameters.

The snapshot of step k holds every repository so far, so the Fisher of step k already
covers the data of all earlier steps; it replaces, rather than adds to, the parent's.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path

from storage import atomic

from .backbone import weights_sha256
from .errors import FisherMismatchError

FISHER_FILE = "fisher.safetensors"
FISHER_META = "fisher.json"
FISHER_FORMAT = 2  # 2: per-example (empirical) Fisher; 1 squared batch-mean gradients


def compute_fisher(module, examples: Iterable[dict]) -> tuple[dict, int]:
    """({parameter name: mean squared per-example gradient}, number of examples) of `module.task_loss`.

    `examples` yields collated batches of exactly one example each (`Collator([item])`);
    a larger batch is refused, since its gradient is a mean over examples.
    """
    import torch

    encoder = module.encoder
    was_training = encoder.training
    encoder.eval()
    params = {n: p for n, p in encoder.named_parameters() if p.requires_grad}
    acc = {n: torch.zeros_like(p, dtype=torch.float32) for n, p in params.items()}
    device = next(encoder.parameters()).device
    count = 0
    try:
        for batch in examples:
            size = int(batch["labels"].shape[0])
            if size != 1:
                raise ValueError(
                    f"compute_fisher got a batch of {size} examples: the empirical Fisher needs per-example "
                    "gradients, so collate one example per batch"
                )
            batch = {k: v.to(device) for k, v in batch.items()}
            encoder.zero_grad(set_to_none=True)
            module.task_loss(batch).backward()
            for n, p in params.items():
                if p.grad is not None:
                    acc[n] += p.grad.detach().float() ** 2
            count += 1
    finally:
        encoder.zero_grad(set_to_none=True)
        encoder.train(was_training)
    return {n: (a / max(count, 1)).cpu().contiguous() for n, a in acc.items()}, count


ESTIMATOR = "empirical diagonal Fisher: mean over training examples of the squared per-example loss gradient"


def save_fisher(model_dir: Path, fisher: dict, num_examples: int, extra: dict | None = None) -> dict:
    """Write fisher.safetensors and fisher.json into `model_dir` (after the model is saved there)."""
    from safetensors.torch import save

    model_dir = Path(model_dir)
    data = save(fisher, metadata={"format": str(FISHER_FORMAT)})
    atomic.write_bytes(model_dir / FISHER_FILE, data)
    meta = {
        "format": FISHER_FORMAT,
        "weights_sha256": weights_sha256(model_dir),
        "fisher_sha256": hashlib.sha256(data).hexdigest(),
        "estimator": ESTIMATOR,
        "num_examples": num_examples,
        "num_parameters": len(fisher),
        "mean": float(sum(float(t.sum()) for t in fisher.values()) / max(1, sum(t.numel() for t in fisher.values()))),
        **(extra or {}),
    }
    atomic.write_json(model_dir / FISHER_META, meta)
    return meta


def load_fisher(model_dir: Path, encoder) -> dict | None:
    """The Fisher saved beside the model in `model_dir`, checked against it; None if there is none."""
    from safetensors.torch import load

    model_dir = Path(model_dir)
    f_path, m_path = model_dir / FISHER_FILE, model_dir / FISHER_META
    if not f_path.exists() and not m_path.exists():
        return None
    if not f_path.exists() or not m_path.exists():
        present, absent = (f_path, m_path) if f_path.exists() else (m_path, f_path)
        raise FisherMismatchError(
            present, f"{absent.name} is missing beside it, so it cannot be checked against the weights"
        )
    meta = json.loads(m_path.read_text())
    if meta.get("format") != FISHER_FORMAT:
        raise FisherMismatchError(
            f_path,
            f"it has format {meta.get('format')}, but this code reads format {FISHER_FORMAT} ({ESTIMATOR}); "
            "format 1 squared batch-mean gradients and underestimates the Fisher by about the batch size",
        )
    actual = weights_sha256(model_dir)
    if meta.get("weights_sha256") != actual:
        raise FisherMismatchError(
            f_path,
            f"it was computed for weights with sha256 {str(meta.get('weights_sha256'))[:16]}…, but the checkpoint's "
            f"weights have sha256 {actual[:16]}…",
        )
    data = f_path.read_bytes()
    if meta.get("fisher_sha256") != hashlib.sha256(data).hexdigest():
        raise FisherMismatchError(f_path, "its bytes differ from those recorded in fisher.json when it was written")
    fisher = load(data)
    params = dict(encoder.named_parameters())
    missing = sorted(set(fisher) - set(params))
    if missing:
        raise FisherMismatchError(f_path, f"it names parameters the model does not have ({', '.join(missing[:3])})")
    bad = [n for n, t in fisher.items() if tuple(t.shape) != tuple(params[n].shape)]
    if bad:
        n = bad[0]
        raise FisherMismatchError(
            f_path, f"parameter {n} has shape {tuple(fisher[n].shape)} there but {tuple(params[n].shape)} in the model"
        )
    return fisher


def anchor_weights(encoder, names) -> dict:
    """Copies of the current values of the parameters `names`: theta* of the penalty."""
    params = dict(encoder.named_parameters())
    return {n: params[n].detach().clone() for n in names}
