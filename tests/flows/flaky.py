"""A failure injected into the real SFT evaluation, for the resume tests.

`evaluate` wraps the real `evaluate_sft` and raises while FAIL_FILE exists and the
snapshot holds `FAIL_AT_STEP` or more repositories' steps.
"""

from pathlib import Path

from tasks.sft.evaluate import evaluate_sft

FAIL_FILE: Path | None = None
FAIL_AT_REPOS = 2


class InjectedFailure(RuntimeError):
    pass


def evaluate(settings, checkpoint_dir, snapshot, split_kind, splits, repo_ids):
    if FAIL_FILE is not None and FAIL_FILE.exists() and len(snapshot.repo_ids) >= FAIL_AT_REPOS:
        raise InjectedFailure(f"injected failure at a step with {len(snapshot.repo_ids)} repositories")
    return evaluate_sft(settings, checkpoint_dir, snapshot, split_kind, splits, repo_ids)
