"""Facts about tactic text that several modules need."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from .lean_text import is_sorry

__all__ = ["is_sorry", "sorry_mask"]


def sorry_mask(tactics: pa.Array | pa.ChunkedArray) -> pa.Array:
    """`is_sorry` of every tactic, as booleans. Vectorised: only the tactics that mention
    sorry or admit at all (a substring match; `sorryAx` and `«sorry»` contain it) are
    checked by `is_sorry` itself."""
    if isinstance(tactics, pa.ChunkedArray):
        tactics = tactics.combine_chunks()
    mentions = pc.or_(pc.match_substring(tactics, "sorry"), pc.match_substring(tactics, "admit"))
    where = pc.indices_nonzero(mentions)
    mask = [False] * len(tactics)
    for i, text in zip(where.to_pylist(), pc.take(tactics, where).to_pylist()):
        mask[i] = is_sorry(text)
    return pa.array(mask, pa.bool_())
