"""Resolving, loading and fingerprinting the retriever's encoder.

- `resolve_backbone(name, cache_dir)`: a backbone name (see `RetrieverSettings.backbone`)
  to something `from_pretrained` loads: a local folder or a hub id.
- `load_encoder(path)`: the encoder and its tokenizer, the encoder in train mode
  (`from_pretrained` leaves modules in eval mode, which silently disables dropout).
  T5-family checkpoints (ByT5, LeanDojo's retriever) load their encoder stack only.
- `weights_sha256(dir)`: a content hash of a checkpoint's weight files, which ties a
  Fisher file and cached premise embeddings to the exact weights they came from.

transformers is imported inside the functions.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from tasks.models.loading import load_tokenizer

from .errors import CheckpointError

_T5_ENCODERS = {"t5": "T5EncoderModel", "mt5": "MT5EncoderModel", "umt5": "UMT5EncoderModel"}


def resolve_backbone(name: str, cache_dir: Path) -> str:
    """A local folder or hub id for `name`; `builtin:` models are built into `cache_dir`.

    Same names as every other trainer (`tasks.models.loading.resolve_model`): tiny
    builtins, `builtin:all-minilm-l6-v2` / `minilm` (the package's folder), paths, hub ids.
    """
    from tasks.models.loading import resolve_model

    return str(resolve_model(name, cache_dir))


def hidden_size(config) -> int:
    """The embedding width of an encoder config (BERT-like `hidden_size`, T5-like `d_model`)."""
    from tasks.models.loading import hidden_size_of

    value = hidden_size_of(config)
    if value is not None:
        return value
    raise CheckpointError(
        getattr(config, "name_or_path", "?"), f"cannot tell the hidden size of a {config.model_type} config"
    )


def load_config(path: str):
    from transformers import AutoConfig

    return AutoConfig.from_pretrained(path)


def load_encoder(path: str):
    """(encoder, tokenizer) from a folder or hub id; the encoder is in train mode."""
    import transformers

    config = load_config(path)
    encoder_cls = _T5_ENCODERS.get(config.model_type)
    if encoder_cls is not None:
        model = getattr(transformers, encoder_cls).from_pretrained(path)
    elif getattr(config, "is_encoder_decoder", False):
        raise CheckpointError(
            path,
            f"{config.model_type} is an encoder-decoder model other than T5, whose encoder this trainer cannot isolate",
        )
    else:
        model = transformers.AutoModel.from_pretrained(path)
    model.train()
    return model, load_tokenizer(path)


def weight_files(model_dir: Path) -> list[Path]:
    model_dir = Path(model_dir)
    files = sorted(model_dir.glob("model*.safetensors")) or sorted(model_dir.glob("pytorch_model*.bin"))
    return files


def weights_sha256(model_dir: Path) -> str:
    """sha256 over the names and bytes of a checkpoint's weight files."""
    files = weight_files(model_dir)
    if not files:
        raise CheckpointError(model_dir, "no model*.safetensors (or pytorch_model*.bin) weight file found")
    h = hashlib.sha256()
    for f in files:
        h.update(f.name.encode() + b"\0")
        with open(f, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 22), b""):
                h.update(chunk)
    return h.hexdigest()
