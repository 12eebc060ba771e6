"""Facts about tactic text and proof states that several layers need, each defined once.

- `is_sorry`: whether a tactic uses `sorry`/`admit` (as Lean lexes it, storage/lean_lexer.py);
  `sorry_mask` is the same rule over a column.
- `NO_GOALS`, `is_finished`: LeanDojo's pretty-printed state of a finished proof, and the
  rule that reads it (surrounding whitespace aside); `finished_mask` over a column.

>>> is_finished("no goals"), is_finished("  no goals\\n"), is_finished("n : Nat\\n⊢ n + 0 = n")
(True, True, False)
>>> is_sorry("refine ⟨sorry, h⟩"), is_sorry("simp -- sorry")
(True, False)

pyarrow is imported by the column functions only: the Lean backends and the GRPO rewards
read these rules without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .lean_text import is_sorry

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["NO_GOALS", "finished_mask", "is_finished", "is_sorry", "sorry_mask"]

NO_GOALS = "no goals"
"""LeanDojo's pretty-printed state of a finished proof (the Dojo's `ProofFinished`, and the
`state_after` of a trace's last tactic)."""


def is_finished(state: str) -> bool:
    """Whether a pretty-printed state says the proof is finished: `no goals`, whitespace
    around it aside. An empty state is not (nothing says the proof ended)."""
    return state.strip() == NO_GOALS


def finished_mask(states: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """`is_finished` of every state, as booleans (nulls stay null)."""
    import pyarrow.compute as pc

    return pc.equal(pc.utf8_trim_whitespace(states), NO_GOALS)


def sorry_mask(tactics: pa.Array | pa.ChunkedArray) -> pa.Array:
    """`is_sorry` of every tactic, as booleans. Vectorised: only the tactics that mention
    sorry or admit at all (a substring match; `sorryAx` and `«sorry»` contain it) are
    checked by `is_sorry` itself."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(tactics, pa.ChunkedArray):
        tactics = tactics.combine_chunks()
    mentions = pc.or_(pc.match_substring(tactics, "sorry"), pc.match_substring(tactics, "admit"))
    where = pc.indices_nonzero(mentions)
    mask = [False] * len(tactics)
    for i, text in zip(where.to_pylist(), pc.take(tactics, where).to_pylist()):
        mask[i] = is_sorry(text)
    return pa.array(mask, pa.bool_())
