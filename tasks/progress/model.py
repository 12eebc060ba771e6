"""Loading the progress model and turning rows into token ids, shared by training,
evaluation and the scorer so that all three see identical inputs.

The model is `AutoModelForSequenceClassification` with one output and
`problem_type="regression"` (MSE loss). A checkpoint is a `save_pretrained` folder
(model and tokenizer) plus `dojoflow_model.json`, which records the settings, the input
template and the target convention it was trained with.

Inputs longer than `max_seq_len` are not cut at the end, which would drop the
candidate tactic (the one part that differs between the candidates of a goal, so
every candidate would score the same). Instead the template's three parts are
budgeted: the candidate is kept (up to a quarter of the budget if it must be cut,
from its start), the goal keeps its beginning, the prefix its most recent tactics.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from storage.errors import InputError
from tasks.models.loading import MODEL_INFO, read_model_info

from .data import INPUT_TEMPLATE, format_input

META_FILE = MODEL_INFO  # the model card every trainer writes (tasks.models.loading.write_model_info)
META_FORMAT_VERSION = 1

# The template's fixed text, in order: before the goal, the prefix and the tactic.
_FRAGMENTS = ("Goal:\n", "\n\nPrefix:\n", "\n\nCandidate tactic:\n")
assert "".join(_FRAGMENTS) == format_input("", "", "")


def resolve_base_model(name: str, cache_dir: Path) -> str:
    """A loadable path or hub id for `name`; `builtin:` names are built under `cache_dir`."""
    from tasks.models import resolve_model

    return str(resolve_model(name, cache_dir))


def load_regression_model(path: str | Path, tokenizer, from_base: bool):
    """The one-output regression model in `path`.

    `from_base`: `path` is a base encoder, whose head (if any) is replaced by a fresh
    one-output head; otherwise it is a progress checkpoint loaded as it is.
    """
    from transformers import AutoModelForSequenceClassification

    kwargs = {"ignore_mismatched_sizes": True} if from_base else {}
    model = AutoModelForSequenceClassification.from_pretrained(
        str(path), num_labels=1, problem_type="regression", **kwargs
    )
    if model.config.pad_token_id is None:
        model.config.pad_token_id = tokenizer.pad_token_id
    return model


def read_meta(checkpoint_dir: str | Path) -> dict:
    """The model card of a progress checkpoint; InputError if it is not one."""
    path = Path(checkpoint_dir) / META_FILE
    try:
        meta = read_model_info(checkpoint_dir) or {}
    except ValueError as e:
        raise InputError(path, f"is not valid JSON ({e})", "Retrain this checkpoint.") from None
    if meta.get("trainer") != "progress":
        raise InputError(
            checkpoint_dir,
            f"is not a progress checkpoint (its {META_FILE} was not written by the progress trainer)",
            "Pass a folder written by tasks.progress.train.train_progress.",
        )
    if meta.get("format_version") != META_FORMAT_VERSION or meta.get("input_template") != INPUT_TEMPLATE:
        raise InputError(
            path,
            f"was written by another progress format (version {meta.get('format_version')}, "
            f"this code reads {META_FORMAT_VERSION} with template {INPUT_TEMPLATE!r})",
            "Retrain the checkpoint with this version of Dojoflow.",
        )
    return meta


def _special_frame(tokenizer) -> tuple[list[int], list[int]]:
    """The special-token ids a tokenizer puts before and after a single sequence."""
    with_special = tokenizer("a", add_special_tokens=True)["input_ids"]
    bare = tokenizer("a", add_special_tokens=False)["input_ids"]
    for k in range(len(with_special) - len(bare) + 1):
        if with_special[k : k + len(bare)] == bare:
            return with_special[:k], with_special[k + len(bare) :]
    raise ValueError(f"cannot locate the text inside the tokenizer's special tokens: {with_special} vs {bare}")


def _budget(goal: int, prefix: int, tactic: int, budget: int) -> tuple[int, int, int]:
    """Tokens kept of (goal, prefix, tactic) when together they exceed `budget`."""
    t_keep = min(tactic, max(budget // 4, budget - goal - prefix))
    rest = budget - t_keep
    p_keep = min(prefix, max(rest // 4, rest - goal))
    g_keep = min(goal, rest - p_keep)
    p_keep = min(prefix, rest - g_keep)
    return g_keep, p_keep, t_keep


def encode_rows(tokenizer, rows: Sequence[tuple[str, str, str]], max_len: int) -> tuple[list[list[int]], int]:
    """Token ids of `format_input(goal, prefix, tactic)` for each row, at most `max_len` each.

    Returns the ids and how many rows had to be shortened.
    """
    texts = [format_input(g, p, t) for g, p, t in rows]
    if not texts:
        return [], 0
    full = tokenizer(texts, add_special_tokens=True, truncation=False, verbose=False)["input_ids"]
    long_rows = [i for i, ids in enumerate(full) if len(ids) > max_len]
    if not long_rows:
        return full, 0
    head, tail = _special_frame(tokenizer)
    frag = tokenizer(list(_FRAGMENTS), add_special_tokens=False)["input_ids"]
    budget = max_len - len(head) - len(tail) - sum(len(f) for f in frag)
    if budget < 8:
        raise InputError(
            "progress settings",
            f"max_seq_len={max_len} leaves {budget} tokens for goal, prefix and tactic after the template",
            f"Raise max_seq_len to at least {max_len - budget + 64}.",
            where="max_seq_len",
        )
    for i in long_rows:
        g, p, t = tokenizer(list(rows[i]), add_special_tokens=False, verbose=False)["input_ids"]
        gk, pk, tk = _budget(len(g), len(p), len(t), budget)
        full[i] = head + frag[0] + g[:gk] + frag[1] + p[len(p) - pk :] + frag[2] + t[:tk] + tail
    return full, len(long_rows)


def features(ids: list[int]) -> dict:
    return {"input_ids": ids, "attention_mask": [1] * len(ids)}
