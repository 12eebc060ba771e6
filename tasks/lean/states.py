"""What the backends that run Lean share: the table of proof states they handed out
(`ProofState.key` -> the backend's own record, which knows how to rebuild the state on a new
process), how a failure becomes a TacticResult, the text kept away from Lean before a check,
and the work folder of their processes."""

from __future__ import annotations

import itertools
import shutil
import tempfile
import threading
from pathlib import Path

from .backend import ProofCheck, ProofState, TacticResult, TheoremSpec, forbidden_message
from .failures import LeanProcessFailure
from .guard import forbidden_construct
from .verdict import bad_input


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


def refused_check(checker: str, theorem: TheoremSpec, proof: str) -> ProofCheck | None:
    """The check of a proof that is never sent to Lean: bad input (an error, nothing checked) or a
    forbidden construct (a rejection); None for a proof to send."""
    bad = bad_input(theorem, proof)
    if bad is not None:
        return ProofCheck(False, checker, error=bad)
    why = forbidden_construct(proof)
    if why is not None:
        return ProofCheck(False, checker, (forbidden_message(why),))
    return None


class WorkRoot:
    """The folder a backend's Lean processes get their working folders in: `work_dir`, else a new
    temporary folder, which `remove()` deletes (a configured one is kept)."""

    def __init__(self, work_dir: str | None, prefix: str):
        self.owned = work_dir is None
        self.path = Path(work_dir) if work_dir else Path(tempfile.mkdtemp(prefix=prefix))
        self.path.mkdir(parents=True, exist_ok=True)

    def remove(self) -> None:
        if self.owned:
            shutil.rmtree(self.path, ignore_errors=True)


class LeanProcessBackend:
    """What a backend that runs Lean processes starts with: its settings, the folder its processes
    work in (`settings.work_dir`, else a new temporary folder whose name starts with `work_prefix`;
    the backend's `close` removes it) and the table of the proof states it hands out."""

    name: str
    work_prefix: str

    def __init__(self, settings):
        self.settings = settings
        self._root = WorkRoot(settings.work_dir, self.work_prefix)
        self.work_root = self._root.path
        self._states = ProofStates()
