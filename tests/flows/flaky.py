"""Test trainers for the resume tests, built on the torch-free `echo` trainer
(tests/echo_trainer.py): those tests assert what is rolled back, cached and recorded, not
training (real SFT's own skip is tested in tests/tasks/test_sft.py, a real SFT resume in
tests/flows/test_curriculum.py's kill test).

`evaluate_echo` wraps echo's evaluation and raises while FAIL_FILE exists and the snapshot
holds `FAIL_AT_REPOS` or more repositories. `echo_train_skipping_first_step` has nothing to
learn at a step of one repository.
"""

from pathlib import Path

from tests.echo_trainer import echo_evaluate, echo_train

FAIL_FILE: Path | None = None
FAIL_AT_REPOS = 2


class InjectedFailure(RuntimeError):
    pass


def evaluate_echo(settings, checkpoint_dir, snapshot, split_kind, splits, repo_ids, *, model_cache_dir=None):
    if FAIL_FILE is not None and FAIL_FILE.exists() and len(snapshot.repo_ids) >= FAIL_AT_REPOS:
        raise InjectedFailure(f"injected failure at a step with {len(snapshot.repo_ids)} repositories")
    return echo_evaluate(
        settings, checkpoint_dir, snapshot, split_kind, splits, repo_ids, model_cache_dir=model_cache_dir
    )


def echo_train_skipping_first_step(
    settings, snapshot, split_kind, parent_dir, out_dir, work_dir, *, model_cache_dir=None
):
    """The echo trainer, except that a snapshot of one repository has 'nothing to learn'."""
    from tasks.trainers.base import SkipTraining

    if len(snapshot.repo_ids) == 1:
        raise SkipTraining("injected: nothing to learn at the first step")
    if parent_dir is not None:
        raise AssertionError(f"a skipped first step has no model to continue from, got {parent_dir}")
    return echo_train(settings, snapshot, split_kind, parent_dir, out_dir, work_dir, model_cache_dir=model_cache_dir)
