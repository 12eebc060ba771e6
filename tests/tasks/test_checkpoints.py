"""Checkpoint ids: what decides the trained weights is in the id, what only decides
evaluation or logging is not (changing it re-evaluates, never retrains)."""

from __future__ import annotations

import json

from tasks.checkpoints import CheckpointRef, StartingPoints, checkpoint_id, code_version
from tasks.config import PipelineConfig
from tasks.sft.config import SFTSettings


def cid(settings: SFTSettings, parent: str | None = None) -> str:
    starts = StartingPoints(previous={"sft": _ref(parent)}) if parent else None
    return checkpoint_id("sft", settings, "snap", starts)


def _ref(cid: str) -> CheckpointRef:
    return CheckpointRef(
        checkpoint_id=cid, trainer="sft", path="/x", snapshot_id="s0", parent_id=None, settings_hash="h", figures={}
    )


def test_training_settings_change_the_id_and_evaluation_or_logging_settings_do_not():
    base = SFTSettings(training={"max_steps": 2, "logging_steps": 1})
    assert cid(SFTSettings(training={"max_steps": 2, "logging_steps": 1})) == cid(base)
    assert cid(base.model_copy(update={"evaluation": base.evaluation.model_copy(update={"top_k": 1})})) == cid(base)
    assert cid(SFTSettings(training={"max_steps": 2, "logging_steps": 5, "save_steps": 7})) == cid(base)
    assert cid(SFTSettings(training={"max_steps": 3, "logging_steps": 1})) != cid(base)
    assert cid(SFTSettings(training={"max_steps": 2, "logging_steps": 1}, system_prompt="Prove it.")) != cid(base)
    assert cid(base, parent="p1") != cid(base, parent="p2") != cid(base)


def test_a_local_model_folder_changed_in_place_gives_a_new_id(tmp_path):
    model = tmp_path / "my-model"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({"hidden_size": 8}))
    (model / "model.safetensors").write_bytes(b"\0" * 64)
    settings = SFTSettings(model=str(model))
    before = cid(settings)
    assert cid(settings) == before
    (model / "config.json").write_text(json.dumps({"hidden_size": 16}))
    assert cid(settings) != before
    after = cid(settings)
    (model / "model.safetensors").write_bytes(b"\0" * 65)
    assert cid(settings) != after


def test_the_default_config_names_no_path_of_the_machine_that_made_it():
    """A deployment stores the flow's default parameters: they must resolve on the worker."""
    dumped = json.dumps(PipelineConfig().model_dump(mode="json"))
    assert "/" not in dumped.replace("https://", "")
    assert [s.sample for s in PipelineConfig().sources] == ["ListLemmas", "LogicPuzzles", "NatBasics"]


def test_fields_that_cannot_change_the_weights_keep_the_id_and_the_learning_rate_changes_it():
    from tasks.progress.config import ProgressSettings
    from tasks.retriever.config import RetrieverSettings

    base = RetrieverSettings()
    same = RetrieverSettings(
        model_cache_dir="/elsewhere",
        checkpoint_every_n_steps=7,
        eval_batch_size=3,
        training={"log_every_n_steps": 1},
        eval_k=[1, 5],
    )
    assert checkpoint_id("retriever", same, "snap") == checkpoint_id("retriever", base, "snap")
    faster = RetrieverSettings(optimizer={"lr": 1e-3})
    assert checkpoint_id("retriever", faster, "snap") != checkpoint_id("retriever", base, "snap")
    progress = ProgressSettings()
    assert checkpoint_id("progress", ProgressSettings(max_eval_examples=5, eval_batch_size=2), "snap") == checkpoint_id(
        "progress", progress, "snap"
    )
    assert checkpoint_id(
        "progress", ProgressSettings(training={"per_device_eval_batch_size": 2}), "snap"
    ) == checkpoint_id("progress", progress, "snap")
    assert checkpoint_id("progress", ProgressSettings(training={"learning_rate": 1e-3}), "snap") != checkpoint_id(
        "progress", progress, "snap"
    )
    sft = SFTSettings()
    assert cid(SFTSettings(evaluation={"max_eval_examples": 3, "batch_size": 2})) == cid(sft)
    assert cid(SFTSettings(training={"learning_rate": 1e-4})) != cid(sft)


def test_the_code_version_is_read_not_hand_bumped():
    import importlib.metadata

    version = code_version()
    try:
        assert version["package"] == importlib.metadata.version("dojoflow")
    except importlib.metadata.PackageNotFoundError:
        assert version["package"] == "unknown"
    assert version["git_commit"] is None or len(version["git_commit"]) == 40


def test_restart_from_base_ignores_the_parent():
    restart = SFTSettings(restart_from_base=True)
    assert cid(restart, parent="p1") == cid(restart)


def test_task_results_round_trip_through_prefects_json_serializer():
    """Tasks return typed records; Prefect stores results as JSON and must read back the same types."""
    from prefect.serializers import JSONSerializer

    from storage.snapshot_ref import SnapshotRef
    from tasks.plan import Step

    serializer = JSONSerializer()
    ref = _ref("c1").model_copy(update={"figures": {"train_loss": 1.5, "steps": 3}})
    records = [
        Step(step=1, primary="r1", name="repo", repo_ids=["r1", "dep"], seen=["r1", "dep"]),
        SnapshotRef(
            snapshot_id="s",
            store_root="/st",
            repo_ids=("r1", "dep"),
            manifest_path="/m.json",
            counts={"random": {"train": {"tactics": 3}}},
        ),
        ref,
        StartingPoints(previous={"sft": ref}, this_step={"sft": ref}),
    ]
    for record in records:
        back = serializer.loads(serializer.dumps(record))
        assert type(back) is type(record) and back == record
