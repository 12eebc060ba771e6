"""What the tactic-mode backends (repl, leandojo) share: the table of proof states they
handed out (`ProofState.key` -> the backend's own record, which knows how to rebuild the
state on a new process), and how a failure becomes a TacticResult."""

from __future__ import annotations

import itertools
import threading

from .backend import ProofState, TacticResult, forbidden_message
from .failures import LeanProcessFailure
from .guard import forbidden_construct


class ProofStates:
    def __init__(self):
        self._records: dict[str, object] = {}
        self._ids = itertools.count()
        self._lock = threading.Lock()

    def remember(self, record, goals: str, goal_count: int | None = None) -> ProofState:
        with self._lock:
            key = str(next(self._ids))
            self._records[key] = record
        return ProofState(key, goals, goal_count)

    def lookup(self, state: ProofState, tactic: str):
        """(the record of `state`, None), or (None, the error to answer) when the tactic must not
        be sent or the state is not one of ours."""
        why = forbidden_construct(tactic)
        if why is not None:
            return None, TacticResult("error", message=forbidden_message(why))
        record = self._records.get(state.key)
        if record is None:
            return None, TacticResult("error", message=f"unknown proof state {state.key!r}: start the theorem first")
        return record, None

    def clear(self) -> None:
        self._records.clear()


def failure_result(e: Exception) -> TacticResult:
    """A crashed or hung process ("error"/"timeout"), or a state that could not be rebuilt ("error")."""
    if isinstance(e, LeanProcessFailure) and e.timed_out:
        return TacticResult("timeout", message=str(e))
    return TacticResult("error", message=str(e))
