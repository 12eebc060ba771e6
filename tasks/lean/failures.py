"""Infrastructure failures of a Lean process (crashed, hung), kept apart from Lean's
rejections: they end as `ProofCheck.error` or a TacticResult "error"/"timeout" with
the reason, never as "failed to prove"."""

from __future__ import annotations


class LeanProcessFailure(Exception):
    """The Lean process crashed or hung (it has been killed; the next request starts a new one)."""

    def __init__(self, message: str, timed_out: bool):
        super().__init__(message)
        self.timed_out = timed_out


def retry_once(attempt):
    """`attempt()`, and once more if the process crashed or hung: the second attempt runs on a
    new process and rebuilds what it needs. The second failure is raised."""
    try:
        return attempt()
    except LeanProcessFailure:
        return attempt()
