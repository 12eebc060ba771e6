"""Small helpers shared by training and evaluation: settings coercion, device, encoding."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

from tasks.models.loading import MODEL_INFO

from .config import RetrieverSettings

RETRIEVER_JSON = MODEL_INFO  # the model card every trainer writes (tasks.models.loading)


def as_settings(settings) -> RetrieverSettings:
    """A `RetrieverSettings` from itself or from a dict (task parameters arrive as JSON)."""
    from tasks.trainers.lifecycle import coerce_settings

    return coerce_settings(settings or {}, RetrieverSettings)


def read_retriever_json(checkpoint_dir: Path) -> dict | None:
    path = Path(checkpoint_dir) / RETRIEVER_JSON
    return json.loads(path.read_text()) if path.exists() else None


def torch_device(settings: RetrieverSettings):
    """The device evaluation and Fisher estimation run on, from the Trainer's accelerator."""
    import torch

    acc = str(settings.trainer_arg("accelerator")).lower()
    if acc in ("gpu", "cuda") or (acc == "auto" and torch.cuda.is_available()):
        if not torch.cuda.is_available():
            raise RuntimeError(
                f"training.accelerator={acc!r} but torch sees no CUDA device: set training.accelerator to 'cpu'."
            )
        return torch.device("cuda")
    if acc == "mps" or (acc == "auto" and getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()):
        return torch.device("mps")
    return torch.device("cpu")


def autocast(settings: RetrieverSettings, device):
    """Mixed precision for inference when the training precision asks for it (GPU only)."""
    import torch

    precision = str(settings.trainer_arg("precision"))
    if device.type == "cuda" and precision.startswith("bf16"):
        return torch.autocast("cuda", dtype=torch.bfloat16)
    if device.type == "cuda" and precision.startswith("16"):
        return torch.autocast("cuda", dtype=torch.float16)
    return contextlib.nullcontext()


def encode_texts(encoder, tokenizer, texts: list[str], settings: RetrieverSettings, device):
    """Embeddings [len(texts), H] (float32, on CPU), batched by length to limit padding."""
    import torch

    from .model import embed

    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    out = [None] * len(texts)
    encoder.eval()
    with torch.inference_mode(), autocast(settings, device):
        for start in range(0, len(order), settings.eval_batch_size):
            idx = order[start : start + settings.eval_batch_size]
            tok = tokenizer(
                [texts[i] for i in idx],
                padding=True,
                truncation=True,
                max_length=settings.max_seq_len,
                return_tensors="pt",
            )
            emb = embed(encoder, tok["input_ids"].to(device), tok["attention_mask"].to(device)).float().cpu()
            for j, i in enumerate(idx):
                out[i] = emb[j]
    if not texts:
        return torch.zeros((0, 0))
    return torch.stack(out)
