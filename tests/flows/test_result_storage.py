"""Cached task results on a Prefect storage block (`result_storage`), here a local-file-system
block rooted outside the home: a rerun finds every step there, Cached; the checkpoints are
copied there too, and a home that lost them fetches them instead of training again. A block that does not
exist or cannot be written fails the run before anything is trained, naming it.

    .venv/bin/python -m pytest tests/flows/test_result_storage.py -q -p no:cacheprovider
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from storage.errors import InputError
from tasks.trainers import registry
from tests.forgetful_trainer import FORGETFUL

from .fixtures import config, task_run_states


@pytest.fixture
def forgetful():
    registry.register(FORGETFUL)
    yield
    registry.unregister("forgetful")


def _config(tmp_path, home, result_storage):
    cfg = config(tmp_path, home, n=2, order="as_given")
    return cfg.model_validate(
        {**cfg.model_dump(), "trainers": {"sft": None, "forgetful": {}}, "result_storage": result_storage}
    )


def test_a_rerun_with_results_on_a_second_file_system_root_is_cached_at_every_step(prefect, tmp_path, forgetful):
    from prefect.filesystems import LocalFileSystem

    from flows.curriculum import curriculum

    shared = tmp_path / "shared-mount"
    LocalFileSystem(basepath=str(shared)).save("team-results", overwrite=True)
    cfg = _config(tmp_path, tmp_path / "home", "local-file-system/team-results")

    first = curriculum(config=cfg, return_state=True)
    first.result()
    second = curriculum(config=cfg, return_state=True)
    second.result()

    steps = ("ingest", "build-snapshot", "train-forgetful", "evaluate-forgetful")
    for run, expected in ((first, "Completed"), (second, "Cached")):
        states = task_run_states([str(run.state_details.flow_run_id)], "")
        cached_steps = [(n, s) for n, s in states if n.startswith(steps)]
        assert len(cached_steps) == 2 + 2 * 3, states  # 2 sources, 2 steps x (snapshot, train, evaluate)
        assert {s for _, s in cached_steps} == {expected}, cached_steps
    assert len(list(shared.iterdir())) >= 8 and len(list((shared / "cache-keys").iterdir())) >= 8
    assert not (tmp_path / "home" / "prefect" / "results").exists()  # nothing cached under the home
    assert (tmp_path / "home" / "prefect" / "locks").is_dir()  # the locks stay on the home's disk

    # The checkpoints were copied to the block; a home that lost them fetches them, no retraining
    ckpts = [s["trainers"]["forgetful"]["checkpoint"] for s in first.result()["steps"]]
    for c in ckpts:
        assert (shared / "checkpoints" / "forgetful" / c["checkpoint_id"] / ".dojoflow-complete").exists()
    shutil.rmtree(tmp_path / "home" / "checkpoints")
    third = curriculum(config=cfg, return_state=True)
    assert [s["trainers"]["forgetful"]["train_state"] for s in third.result()["steps"]] == ["Cached", "Cached"]
    for c in ckpts:
        assert (Path(c["path"]) / "dojoflow-checkpoint.json").is_file() and (
            Path(c["path"]) / "started_from.txt"
        ).is_file()


def test_a_storage_block_that_does_not_exist_or_cannot_be_written_fails_before_training(prefect, tmp_path, forgetful):
    from prefect.filesystems import LocalFileSystem

    from flows.curriculum import curriculum

    with pytest.raises(InputError, match=r"result_storage \(local-file-system/no-such-block\): no such block"):
        curriculum(config=_config(tmp_path, tmp_path / "home", "local-file-system/no-such-block"))
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    LocalFileSystem(basepath=str(blocker / "sub")).save("unwritable", overwrite=True)
    with pytest.raises(InputError, match=r"result_storage \(local-file-system/unwritable\): cannot be written"):
        curriculum(config=_config(tmp_path, tmp_path / "home", "local-file-system/unwritable"))
    assert not (tmp_path / "home" / "checkpoints").exists()
