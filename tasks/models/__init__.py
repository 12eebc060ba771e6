"""Models shared by all trainers: tiny locally built models (`tiny.py`) and how a
configured model name (builtin, local path, hub id) is resolved and loaded
(`loading.py`). Heavy imports (torch, transformers, peft) happen inside functions."""

from .loading import (
    BUILTIN_PREFIX,
    MODEL_INFO,
    adapter_base,
    default_model_cache,
    is_adapter_dir,
    load_causal_lm,
    load_tokenizer,
    read_model_info,
    resolve_model,
    write_model_info,
)
from .tiny import build_tiny_causal_lm, build_tiny_encoder

TINY_CAUSAL_LM = BUILTIN_PREFIX + "tiny-causal-lm"
TINY_ENCODER = BUILTIN_PREFIX + "tiny-encoder"

__all__ = [
    "BUILTIN_PREFIX",
    "MODEL_INFO",
    "TINY_CAUSAL_LM",
    "TINY_ENCODER",
    "adapter_base",
    "build_tiny_causal_lm",
    "build_tiny_encoder",
    "default_model_cache",
    "is_adapter_dir",
    "load_causal_lm",
    "load_tokenizer",
    "read_model_info",
    "resolve_model",
    "write_model_info",
]
