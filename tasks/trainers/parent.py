"""The configured base model of a step that continues from a parent checkpoint.

With a parent checkpoint a curriculum step trains from the parent's weights; the
configured model (the progress trainer's `model`, the retriever's `backbone`) only
names the curriculum's base. One that does not fit the parent would silently not be
used, so each trainer compares it with the parent and refuses a mismatch with its own
error (what must match is the trainer's: the retriever's hidden size; the progress
model's architecture and hidden size). The part they share is here: which
architecture to compare, and when there is nothing to compare.
"""

from __future__ import annotations

import logging
import os

from storage.errors import InputError

logger = logging.getLogger(__name__)

SAME_AS_PARENT = "same model as the parent"
COMPARED = "compared"


def configured_architecture(
    model: str, parent_model: str | None, parent_dir, cache_dir: str | os.PathLike
) -> tuple[tuple[str, int | None] | None, str]:
    """((model_type, hidden width) of `model`, status), or (None, why there is nothing to compare).

    Nothing to compare when `model` names the parent's own model (`parent_model`, aliases
    resolved), or when `model`'s config cannot be read here (a hub id offline): a
    warning, since the parent's weights are what training continues from.
    """
    from tasks.models.loading import architecture_of, canonical_name, resolve_model

    if parent_model is not None and canonical_name(parent_model) == canonical_name(model):
        return None, SAME_AS_PARENT
    try:
        return architecture_of(resolve_model(model, cache_dir)), COMPARED
    except (OSError, ValueError, ImportError, InputError) as e:
        logger.warning(
            "cannot read the config of model %r (%s); continuing from the parent %s without checking it",
            model,
            e,
            parent_dir,
        )
        return None, f"not checked: the config of {model!r} cannot be read here"
