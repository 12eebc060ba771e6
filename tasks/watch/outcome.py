"""What the retraining over the changed repositories did, the nightly flow's result, and
failing the night when any part of it failed."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from storage.errors import DojoflowError

from ..plan import SourceFailure
from .config import WatchedRepo
from .plan import Checked, succeeded


class NightlyFailed(DojoflowError):
    """A nightly run did part of its work and failed the rest; the report artifact says what.

    `problems` maps a watched repository's label to its error. Not transient: the next night
    retries whatever was not recorded, since only trained commits are recorded.
    """

    def __init__(self, summary: str, problems: Mapping[str, str]):
        self.summary = summary
        self.problems = dict(problems)
        super().__init__(f"{summary}: " + "; ".join(f"{label}: {err}" for label, err in self.problems.items()))


class WatchCheckFailed(NightlyFailed):
    """Some watched repositories could not be checked; the others were processed."""


class RetrainingFailed(NightlyFailed):
    """Some or all changed repositories failed to trace or import; only the others were trained
    and recorded."""


@dataclass(frozen=True)
class Retraining:
    """What the curriculum run over the changed repositories did.

    `trained`: the `(repo, commit)` pairs to record. `failed`: label -> error of the changed
    repositories that failed to ingest (trace or import). `exception`: what the run raised, if
    it failed as a whole (then nothing was trained). `report`: the curriculum's report path;
    `checkpoints`: trainer -> the folder of its last checkpoint.
    """

    changed: list[tuple[WatchedRepo, str]]
    trained: list[tuple[WatchedRepo, str]]
    failed: dict[str, str]
    exception: BaseException | None = None
    report: str | None = None
    checkpoints: dict[str, str] = field(default_factory=dict)

    @property
    def error(self) -> str | None:
        e = self.exception
        return None if e is None else f"{type(e).__name__}: {e}"


def retraining_outcome(changed: list[tuple[WatchedRepo, str]], run: dict | BaseException) -> Retraining:
    """`run`: the curriculum flow's result, or the exception it raised."""
    if isinstance(run, BaseException):
        return Retraining(changed, trained=[], failed={}, exception=run)
    failures = [SourceFailure.model_validate(f) for f in run.get("failures") or []]  # the flow result's JSON
    return Retraining(
        changed,
        trained=succeeded(changed, failures),
        failed={f.source: f.error for f in failures},
        report=run.get("report"),
        checkpoints=dict(run.get("checkpoints") or {}),
    )


def raise_for_failures(checked: list[Checked], retraining: Retraining | None) -> None:
    """Fail the night, once everything else is done, if any part of it failed.

    The curriculum's own exception if it raised; RetrainingFailed if some changed repositories
    failed to ingest (all of them: nothing was trained); WatchCheckFailed if some checks failed.
    """
    if retraining is not None and retraining.exception is not None:
        raise retraining.exception
    unchecked = {c.repo.label: c.error for c in checked if c.error}
    if retraining is not None and retraining.failed:
        n, total = len(retraining.failed), len(retraining.changed)
        summary = (
            f"nothing was trained: all {total} changed repositories failed"
            if not retraining.trained
            else f"{n} of {total} changed repositories failed (the other {total - n} were trained and recorded)"
        )
        raise RetrainingFailed(summary, {**retraining.failed, **unchecked})
    if unchecked:
        raise WatchCheckFailed(
            f"{len(unchecked)} of {len(checked)} watched repositories could not be checked", unchecked
        )


def night_result(checked: list[Checked], changed: list[tuple[WatchedRepo, str]], retraining: Retraining | None) -> dict:
    """The nightly flow's return value: commits checked, changed and recorded (by `WatchedRepo.key`),
    the curriculum's report and checkpoints (None and {} when nothing changed)."""
    return {
        "checked": {c.repo.key: c.commit for c in checked},
        "changed": {r.key: commit for r, commit in changed},
        "recorded": {r.key: commit for r, commit in (retraining.trained if retraining else [])},
        "report": retraining.report if retraining else None,
        "checkpoints": retraining.checkpoints if retraining else {},
    }
