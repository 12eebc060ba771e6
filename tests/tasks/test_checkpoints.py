"""Checkpoint ids: what decides the trained weights is in the id, what only decides
evaluation or logging is not (changing it re-evaluates, never retrains)."""

from __future__ import annotations

import json

from tasks.checkpoints import checkpoint_id
from tasks.config import PipelineConfig
from tasks.sft.config import SFTSettings


def cid(settings: SFTSettings, parent: str | None = None) -> str:
    return checkpoint_id("sft", settings, "snap", parent)


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
