"""Facts about tactic text that several modules need."""

from __future__ import annotations


def is_sorry(tactic: str) -> bool:
    """A tactic that proves nothing: `sorry` or `admit`, alone or at the end of a line."""
    t = tactic.strip()
    return t in ("sorry", "admit") or t.endswith((" sorry", "\tsorry", " admit"))
