"""GRPOSettings (tasks/grpo/config.py): the algorithm's TRL settings reach GRPOConfig, the machine's
defaults, and every bad setting refused with the field named, before anything runs."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from storage.errors import InputError
from tasks.grpo.config import GRPOSettings, build_grpo_config, preflight


def test_each_algorithm_reaches_grpo_config_with_cpu_defaults(tmp_path):
    dapo = build_grpo_config(
        GRPOSettings(algorithm="dapo", rewards={"lean_tactic": 1.0, "format": 0.2}), tmp_path, cuda=False, bf16_ok=False
    )
    assert (dapo.loss_type, dapo.epsilon, dapo.epsilon_high, dapo.beta, dapo.mask_truncated_completions) == (
        "dapo",
        0.2,
        0.28,
        0.0,
        True,
    )
    assert dapo.reward_weights == [1.0, 0.2]
    assert dapo.use_cpu and not dapo.bf16 and not dapo.gradient_checkpointing
    dr = build_grpo_config(GRPOSettings(algorithm="drgrpo"), tmp_path, cuda=False, bf16_ok=False)
    assert (dr.loss_type, dr.scale_rewards) == ("dr_grpo", "none")
    gspo = build_grpo_config(
        GRPOSettings(algorithm="gspo", algorithm_config={"epsilon": 1e-3}), tmp_path, cuda=False, bf16_ok=False
    )
    assert (gspo.importance_sampling_level, gspo.epsilon, gspo.epsilon_high) == ("sequence", 1e-3, 4e-4)
    user = build_grpo_config(
        GRPOSettings(training={"num_generations": 2, "learning_rate": "3e-6"}), tmp_path, cuda=False, bf16_ok=False
    )
    assert user.num_generations == 2 and user.learning_rate == 3e-6 and user.beta == 0.04


@pytest.mark.parametrize(
    "fields, where",
    [
        ({"algorithm": "ppo"}, "algorithm"),
        ({"algorithm_config": {"clip": 0.1}}, "algorithm_config"),
        ({"rewards": {"lean": 1.0}}, "rewards.lean"),
        ({"training": {"num_generations": 1}}, "training.num_generations"),
        ({"training": {"num_generations": 3}}, "training.num_generations"),
        ({"training": {"loss_type": "grpo"}}, "training.loss_type"),
        ({"training": {"beta": 0.1}}, "training.beta"),
        ({"training": {"use_vllm": True}}, "training.use_vllm"),
        ({"reward": {"error_penalty": 0.5}}, "error_penalty"),
        ({"mode": "proof", "rewards": {"lean_tactic": 1.0}}, "lean_tactic"),
    ],
)
def test_bad_settings_name_the_field(fields, where):
    with pytest.raises(ValidationError) as e:
        GRPOSettings.model_validate(fields)
    assert where in str(e.value)


def test_preflight_checks_training_against_grpo_config():
    with pytest.raises(InputError, match="trainers.grpo.training.max_stepz: is not an argument of trl.GRPOConfig"):
        preflight(GRPOSettings(training={"max_stepz": 3}), "trainers.grpo")
    with pytest.raises(InputError, match="trainers.grpo.training.max_steps"):
        preflight(GRPOSettings(training={"max_steps": 0}), "trainers.grpo")
    preflight(GRPOSettings(training={"max_steps": 2}), "trainers.grpo")


def test_dapo_dynamic_sampling_is_refused_in_several_processes():
    """A DAPO refill generates on one rank with collectives the others do not join (lean_trainer.py)."""
    with pytest.raises(InputError, match=r"trainers.grpo.algorithm_config.dynamic_sampling: is on but .* 2 processes"):
        preflight(GRPOSettings(algorithm="dapo", launch={"processes": 2}), "trainers.grpo")
    with pytest.raises(InputError, match="dynamic_sampling"):
        preflight(GRPOSettings(algorithm="dapo", launch={"processes": 2, "nodes": 1}), "trainers.grpo")
    off = GRPOSettings(algorithm="dapo", algorithm_config={"dynamic_sampling": False}, launch={"processes": 2})
    preflight(off, "trainers.grpo")
    preflight(GRPOSettings(algorithm="dapo", training={"max_steps": 2}), "trainers.grpo")  # one process: as before


def test_every_field_has_a_description():
    from tasks.grpo.config import GRPOEvalSettings, RewardSettings

    for model in (GRPOSettings, RewardSettings, GRPOEvalSettings):
        assert all(f.description for f in model.model_fields.values()), model


@pytest.mark.parametrize(
    "fields, where",
    [
        ({"rewards": {"lean_tactic": float("nan")}}, ("rewards", "lean_tactic")),  # trained with every reward 0
        ({"rewards": {"lean_tactic": float("inf")}}, ("rewards", "lean_tactic")),
        ({"reward": {"finished": float("nan")}}, ("reward", "finished")),
        ({"evaluation": {"temperature": float("nan")}}, ("evaluation", "temperature")),
    ],
)
def test_a_reward_weight_or_payment_that_is_not_a_finite_number_is_refused(fields, where):
    with pytest.raises(ValidationError) as e:
        GRPOSettings.model_validate(fields)
    assert e.value.errors()[0]["loc"] == where and "finite number" in e.value.errors()[0]["msg"]


def test_a_nan_yaml_reward_is_refused_naming_the_key(tmp_path):
    from tasks.config import PipelineConfig

    path = tmp_path / "c.yaml"
    path.write_text("trainers:\n  grpo:\n    rewards: {lean_tactic: .nan}\n")
    with pytest.raises(InputError) as e:
        PipelineConfig.from_yaml(path)
    assert "trainers.grpo.rewards.lean_tactic" in str(e.value) and "finite number" in str(e.value)
