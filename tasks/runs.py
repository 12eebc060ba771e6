"""What runs recorded in the catalog, as the CLI and the flow ask for it: run rows,
crashed runs, and the metrics of a run (the SQL is in storage/runs.py and storage/metrics.py).

A run's metrics are every row it recorded, fresh or from a cached evaluation, so a
run can be read whole after later runs (`metrics` is keyed by run, docs/runs.md).

    dojoflow runs
    dojoflow metrics --run <run id or prefix> --split test
"""

from __future__ import annotations

from storage import checkpoint_registry, metrics
from storage import runs as run_records
from storage.errors import InputError
from storage.schemas import SPLITS


def record_run_start(store, run_id: str, flow: str, config: dict) -> None:
    from . import ledger

    run_records.record_start(store, run_id, flow, config)
    ledger.record_start(store, run_id)  # code, environment, verifier rule: the card's provenance


def record_run_end(store, run_id: str, status: str, report_path: str | None = None, finished_at=None) -> None:
    """Close a run's row; a failed run keeps the report path it never wrote as NULL."""
    from . import ledger

    run_records.record_end(store, run_id, status, report_path, finished_at)
    ledger.record_end(store, run_id)  # the CPU seconds the run cost


def mark_crashed_runs(store) -> list[str]:
    """Mark `crashed` every `running` run whose process is gone; their ids."""
    crashed = run_records.crashed_runs(store)
    run_records.mark_crashed(store, crashed)
    return crashed


def runs_table(store) -> list[dict]:
    """Every run, newest first, with the last checkpoint of each trainer (`checkpoints`:
    {trainer: path})."""
    latest = checkpoint_registry.latest_of_runs(store)
    return [{**r, "checkpoints": latest.get(r["run_id"], {})} for r in run_records.all_runs(store)]


def check_split(split: str | None) -> None:
    """A `--split` that can name no split of any run, refused before the store is read
    (so a store with no runs yet does not hide the typo)."""
    if split is not None and split not in SPLITS:
        raise InputError(split, "is not a split", f"use one of: {', '.join(SPLITS)}", where="--split")


def resolve_run(store, run: str | None, where: str = "--run") -> str | None:
    """A run id or unique prefix -> the run id; None -> the newest run that recorded metrics.
    `where`: how the command line names the input (an option, or a positional argument)."""
    if run is None:
        return metrics.newest_run(store)
    if not run.strip():  # an empty prefix matched every run, and so the only one
        raise InputError(repr(run), "is empty", "give a run id (or a prefix) from `dojoflow runs`", where=where)
    found = run_records.resolve(store, run)
    if len(found) != 1:
        what = "matches no run" if not found else f"matches {len(found)} runs"
        raise InputError(run, what, "give a run id (or a longer prefix) from `dojoflow runs`", where=where)
    return found[0]


def metrics_table(
    store, run_id: str, trainer: str | None = None, split: str | None = None, repository: str | None = None
) -> list[dict]:
    """Metric rows of one run, per step, trainer, repository and split. A filter that
    names nothing the run recorded is an error listing what it did record."""
    valid = metrics.choices(store, run_id)
    for option, value in (("--trainer", trainer), ("--split", split), ("--repository", repository)):
        allowed = valid[option.lstrip("-")]
        if value is not None and value not in allowed:
            raise InputError(
                value,
                f"is not a {option.lstrip('-')} of run {run_id}",
                f"use one of: {', '.join(allowed) or '(none)'}",
                where=option,
            )
    return metrics.of_run(store, run_id, trainer, split, repository)
