"""The nightly run's name and its markdown report, in every outcome."""

from __future__ import annotations

from datetime import date

from ..formatting import markdown_table
from ..git import redact_url
from .config import WatchedRepo
from .outcome import Retraining
from .plan import Checked
from .state import NightlyState


def night_name(config, day: date) -> str:
    """`nightly 2026-11-24` (with the pipeline's name when it is not `nightly`): nights told apart
    in the UI. `config`: a NightlyConfig, or its dict (a deployment run's parameters), or None."""
    pipeline = getattr(getattr(config, "pipeline", None), "name", None)
    if pipeline is None and isinstance(config, dict):
        pipeline = (config.get("pipeline") or {}).get("name")
    label = "nightly" if pipeline in (None, "nightly") else f"nightly {pipeline}"
    return f"{label} {day.isoformat()}"


def summary_markdown(
    checked: list[Checked],
    changed: list[tuple[WatchedRepo, str]],
    state: NightlyState,
    retraining: Retraining | None = None,
) -> str:
    """The nightly run's report, in every outcome: every repository checked, its commit, and what
    was done with it (unchanged, trained, failed and why)."""
    trained = {r.key for r, _ in (retraining.trained if retraining else [])}
    failed = retraining.failed if retraining else {}
    unchecked = [c for c in checked if c.error]
    if retraining is not None and retraining.exception is not None:
        head = (
            f"## Nightly: retraining failed\n\nThe curriculum run over {len(changed)} changed repositories "
            f"failed: `{retraining.error}`\n\nNo commit was recorded; the next night retries them.\n"
        )
    elif retraining is not None and failed and not trained:
        head = (
            f"## Nightly: nothing was trained\n\nAll {len(changed)} changed repositories failed to trace or "
            "import. No commit was recorded; the next night retries them.\n"
        )
    elif retraining is not None and failed:
        head = (
            f"## Nightly: {len(trained)} of {len(changed)} changed repositories retrained\n\n"
            f"{len(failed)} failed to trace or import; their commits were not recorded, and the next "
            "night retries them.\n"
        )
    elif changed:
        head = f"## Nightly: {len(changed)} repositories changed\n\nRetrained on the new commits and recorded them.\n"
    elif unchecked:
        head = "## Nightly: some repositories could not be checked\n\nNo other watched repository has a new commit.\n"
    else:
        head = "## Nightly: nothing changed\n\nNo watched repository has a new commit; nothing was retrained.\n"
    changed_keys = {r.key for r, _ in changed}
    rows = []
    for c in checked:
        repo, last = c.repo, state.commit_of(c.repo)
        if c.error:
            status = f"check failed: {_cell(c.error)}"
        elif repo.key not in changed_keys:
            status = "unchanged"
        elif repo.key in trained:
            status = "new commit: trained and recorded"
        elif repo.label in failed:
            status = f"new commit: failed, not recorded: {_cell(failed[repo.label])}"
        elif retraining is not None and retraining.exception is not None:
            status = "new commit: retraining failed, not recorded"
        else:
            status = "new commit"
        rows.append(
            [f"{repo.label} (`{redact_url(repo.url_or_path)}`)", repo.branch or "HEAD"]
            + [f"`{(c.commit or '-')[:12]}`", f"`{(last or '-')[:12]}`", status]
        )
    lines = [head, *markdown_table(["repository", "branch", "newest commit", "last processed", "status"], rows)]
    if retraining is not None and retraining.report:
        lines += ["", f"Curriculum report: `{retraining.report}`"]
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    """`text` on one line, short enough for a table cell (the table escapes it: tasks/formatting.py)."""
    return " ".join(text.split())[:500]
