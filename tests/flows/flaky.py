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


def evaluate(settings, checkpoint_dir, snapshot, split_kind, splits, repo_ids, *, model_cache_dir=None):
    if FAIL_FILE is not None and FAIL_FILE.exists() and len(snapshot.repo_ids) >= FAIL_AT_REPOS:
        raise InjectedFailure(f"injected failure at a step with {len(snapshot.repo_ids)} repositories")
    return evaluate_sft(
        settings, checkpoint_dir, snapshot, split_kind, splits, repo_ids, model_cache_dir=model_cache_dir
    )


def train_skipping_first_step(settings, snapshot, split_kind, parent_dir, out_dir, work_dir, *, model_cache_dir=None):
    """The real SFT trainer, except that a snapshot of one repository has 'nothing to learn'."""
    from tasks.sft.train import train_sft
    from tasks.trainers.base import SkipTraining

    if len(snapshot.repo_ids) == 1:
        raise SkipTraining("injected: nothing to learn at the first step")
    if parent_dir is not None:
        raise AssertionError(f"a skipped first step has no model to continue from, got {parent_dir}")
    return train_sft(settings, snapshot, split_kind, parent_dir, out_dir, work_dir, model_cache_dir=model_cache_dir)
