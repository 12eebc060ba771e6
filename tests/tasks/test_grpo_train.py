"""Real GRPO training (tasks/grpo/train.py) on the tiny model, on CPU, from a briefly trained SFT
checkpoint (so completions can end), with rewards from the replay backend on the sample's traced
proofs: every algorithm in tactic mode, proof mode on a lean-grpo theorem file, evaluation, and the
bad inputs that must stop a run before training. Replay answers from traced data; no Lean runs.

    PYTHONPATH=$PWD HF_HUB_OFFLINE=1 .venv/bin/python -m pytest tests/tasks/test_grpo_train.py -q
"""

from __future__ import annotations

import json

import pytest

from storage.errors import InputError
from storage.snapshot import build_snapshot
from tasks.grpo.config import GRPOSettings
from tasks.grpo.evaluate import evaluate_grpo
from tasks.grpo.theorem_files import FileTheorem, evaluate_on_theorem_file, train_on_theorem_file
from tasks.grpo.train import HISTORY_FILE, train_grpo
from tasks.models.loading import read_model_info
from tests.doubles.sample_store import sample_store
from tests.tasks.frozen_imports import imports_frozen

# One optimizer step on two groups of two completions: enough to run every hook, short on CPU.
ONE_STEP = {
    "max_steps": 1,
    "num_generations": 2,
    "per_device_train_batch_size": 4,
    "max_completion_length": 12,
    "temperature": 1.2,
    "save_strategy": "no",
}


@pytest.fixture(scope="module", autouse=True)
def _imported_modules_out_of_the_collectors_reach():
    """Each `Trainer.train()` here (SFT's, then GRPO's) starts with a full garbage collection: what
    training imports is frozen for this module's tests (tests/tasks/frozen_imports.py)."""
    with imports_frozen("accelerate", "datasets", "peft", "trl", "tasks.grpo.lean_trainer"):
        yield


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    from tasks.sft import train_sft

    root = tmp_path_factory.mktemp("grpo")
    store = sample_store(root / "home")
    repo = next(r["repo_id"] for r in store.repositories() if r["name"] == "NatBasics")
    snapshot = build_snapshot(store, [repo])
    sft = root / "sft"
    train_sft(
        {
            "training": {
                "max_steps": 20,
                "learning_rate": 3e-3,
                "per_device_train_batch_size": 8,
                "save_strategy": "no",
                "disable_tqdm": True,
            }
        },
        snapshot,
        "random",
        None,
        sft,
        root / "sft-work",
        model_cache_dir=root / "models",
    )
    return {"root": root, "store": store, "snapshot": snapshot, "sft": sft, "cache": root / "models", "repo": repo}


def settings(**kw):
    base = {"max_prompts": 8, "rewards": {"lean_tactic": 1.0, "format": 0.1}, "training": ONE_STEP}
    return GRPOSettings.model_validate({**base, **kw})


@pytest.mark.parametrize("algorithm", ["grpo", "dr_grpo", "dapo", "gspo", "dgpo"])
def test_each_algorithm_trains_from_sft_with_replay_rewards(env, algorithm, tmp_path):
    config = {"max_resample_rounds": 1} if algorithm == "dapo" else {}
    figures = train_grpo(
        settings(algorithm=algorithm, algorithm_config=config, init_from="sft"),
        env["snapshot"],
        "random",
        env["sft"],
        tmp_path / "out",
        tmp_path / "work",
        model_cache_dir=env["cache"],
    )
    assert figures["steps"] == 1 and figures["algorithm"] == algorithm and figures["checker"] == "replay"
    assert figures["started_from"] == "parent" and figures["prompts"] == 8
    history = json.loads((tmp_path / "out" / HISTORY_FILE).read_text())
    step = history[0]
    for key in (
        "reward",
        "rewards/lean_tactic/mean",
        "rewards/format/mean",
        "frac_reward_zero_std",
        "lean/lean_tactic_accepted",
        "completions/mean_length",
        "clip_ratio/region_mean",
    ):
        assert key in step, key
    assert -0.1 - 1e-6 <= step["rewards/lean_tactic/mean"] <= 1.0
    # the ledger's tokens generated (issue 17 §1): every completion's tokens up to its end, TRL's completion mask
    assert figures["tokens_generated"] >= step["completions/mean_length"] > 0
    if algorithm == "dapo":
        assert "dapo/groups_dropped" in step
    if algorithm == "dgpo":
        assert "dgpo/pairs" in step
    if algorithm in ("grpo", "dgpo"):
        assert "kl" in step  # beta > 0
    info = read_model_info(tmp_path / "out")
    assert info["trainer"] == "grpo" and info["parent_dir"] == str(env["sft"])
    config_json = json.loads((tmp_path / "out" / "grpo_config.json").read_text())
    assert config_json["use_cpu"] and not config_json["bf16"] and not config_json["gradient_checkpointing"]


def test_evaluation_reports_replay_pass_at_k_and_the_steps_training_rewards(env, tmp_path):
    s = settings(algorithm="grpo", evaluation={"k": 2, "max_theorems": 2, "max_new_tokens": 16})
    train_grpo(
        s, env["snapshot"], "random", env["sft"], tmp_path / "out", tmp_path / "work", model_cache_dir=env["cache"]
    )
    metrics = evaluate_grpo(
        s, tmp_path / "out", env["snapshot"], "random", ["val", "test"], [env["repo"]], model_cache_dir=env["cache"]
    )
    names = {(m.split, m.metric) for m in metrics}
    assert ("val", "replay_pass@1") in names and ("val", "replay_pass@2") in names
    assert ("train", "train_reward") in names and ("train", "train_accepted") in names
    assert all(0.0 <= m.value <= 1.0 for m in metrics if "pass@" in m.metric)
    assert all(m.count == 2 for m in metrics if "pass@" in m.metric)


def test_proof_mode_on_a_lean_grpo_theorem_file(env, tmp_path):
    theorems = [
        FileTheorem("one_mul'", "theorem one_mul' (n : Nat) : 1 * n = n"),  # matched by its last component
        FileTheorem("NatBasics.mul_comm'", "theorem mul_comm' (n m : Nat) : n * m = m * n"),
    ]
    s = GRPOSettings(mode="proof", model=str(env["sft"]), algorithm="gspo", max_prompts=4, training=ONE_STEP)
    figures = train_on_theorem_file(
        s, theorems, tmp_path / "out", tmp_path / "work", env["store"], model_cache_dir=env["cache"]
    )
    assert figures["steps"] == 1 and figures["mode"] == "proof" and figures["matched_in_store"] == 2
    history = json.loads((tmp_path / "out" / HISTORY_FILE).read_text())
    assert "lean/lean_proof_accepted" in history[0]
    result = evaluate_on_theorem_file(
        s.model_copy(update={"evaluation": s.evaluation.model_copy(update={"k": 2})}),
        tmp_path / "out",
        theorems,
        env["store"],
        model_cache_dir=env["cache"],
    )
    assert result["checker"] == "replay" and result["theorems"] == 2 and "replay_pass@2" in result
    # the closing-tactics baseline beside the figures, with its interval (issue 26: it printed none)
    assert 0.0 <= result["baseline_replay_pass@2"] <= 1.0 and len(result["intervals"]["baseline_replay_pass@2"]) == 2


def test_a_backend_that_cannot_run_stops_the_run_before_training(env, tmp_path):
    s = settings(backend={"kind": "repl", "repl": {"lake_path": str(tmp_path / "no-lake")}})
    with pytest.raises(InputError, match="lake"):
        train_grpo(
            s, env["snapshot"], "random", env["sft"], tmp_path / "out", tmp_path / "work", model_cache_dir=env["cache"]
        )
    assert not (tmp_path / "out").exists() and not (tmp_path / "work").exists()


def test_init_from_sft_is_the_trainers_starting_point():
    from tasks.trainers import registry

    assert registry.get("grpo").start_of(GRPOSettings(init_from="sft")) == "sft"
    assert registry.get("grpo").start_of(GRPOSettings()) is None
    assert registry.training_order({"grpo": GRPOSettings(init_from="sft"), "sft": object()}) == ["sft", "grpo"]


def test_lora_adapter_with_dgpo_reference_from_the_disabled_adapter(env, tmp_path):
    s = settings(algorithm="dgpo", algorithm_config={"beta": 0.0}, lora={"r": 4, "alpha": 8})
    figures = train_grpo(
        s, env["snapshot"], "random", env["sft"], tmp_path / "out", tmp_path / "work", model_cache_dir=env["cache"]
    )
    assert figures["model_kind"] == "lora" and (tmp_path / "out" / "adapter_config.json").is_file()
    assert read_model_info(tmp_path / "out")["base_model"] == str(env["sft"].resolve())
    assert "dgpo/pairs" in json.loads((tmp_path / "out" / HISTORY_FILE).read_text())[0]


def test_full_training_from_an_sft_adapter_keeps_the_merged_start_as_kl_reference(env, tmp_path):
    """Before the fix TRL reloaded the reference from the base model's path: KL > 0 at the first step."""
    from tasks.sft import train_sft

    adapter = tmp_path / "sft-lora"
    train_sft(
        {
            "lora": {"r": 4, "alpha": 8},
            "training": {
                "max_steps": 3,
                "learning_rate": 1e-2,
                "per_device_train_batch_size": 8,
                "save_strategy": "no",
            },
        },
        env["snapshot"],
        "random",
        None,
        adapter,
        tmp_path / "sft-work",
        model_cache_dir=env["cache"],
    )
    s = settings(algorithm="grpo", algorithm_config={"beta": 0.1})
    train_grpo(s, env["snapshot"], "random", adapter, tmp_path / "out", tmp_path / "work", model_cache_dir=env["cache"])
    assert (tmp_path / "work" / "reference" / "config.json").is_file()
    first = json.loads((tmp_path / "out" / HISTORY_FILE).read_text())[0]
    assert first["kl"] == pytest.approx(0.0, abs=1e-6)  # the policy starts where the reference is


def test_grpo_writes_a_timed_checkpoint_and_resumes_from_it(env, tmp_path):
    """As SFT and the progress model do (tests/tasks/test_time_checkpoints.py): a checkpoint every
    `checkpoint_every_minutes` although `save_steps` is never reached (here every step: 60 µs)."""
    from transformers import TrainerCallback

    class Stop(Exception):
        pass

    class CrashAtStep2(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            if state.global_step == 2:
                raise Stop

    s = settings(
        checkpoint_every_minutes=1e-6,
        training={**ONE_STEP, "max_steps": 3, "save_strategy": "steps", "save_steps": 10_000},
    )
    run = (s, env["snapshot"], "random", None, tmp_path / "out", tmp_path / "work")
    with pytest.raises(Stop):
        train_grpo(*run, model_cache_dir=env["cache"], callbacks=[CrashAtStep2()])
    assert (tmp_path / "work" / "trainer" / "checkpoint-1" / "trainer_state.json").is_file()
    resumed = train_grpo(*run, model_cache_dir=env["cache"])
    assert resumed["resumed_from"] == "checkpoint-1" and resumed["steps"] == 3


def test_init_from_sft_proof_starts_from_the_whole_proof_sft_checkpoint_of_the_step():
    """Issue 22: GRPO could not start from an `sft_proof` checkpoint (init_from allowed self and sft only)."""
    from tasks.checkpoints import CheckpointRef, StartingPoints, plan_step
    from tasks.trainers import registry

    settings = GRPOSettings(init_from="sft_proof", mode="proof")
    assert registry.get("grpo").start_of(settings) == "sft_proof"
    assert registry.training_order({"grpo": settings, "sft_proof": object()}) == ["sft_proof", "grpo"]
    parent = CheckpointRef(
        checkpoint_id="sftp1",
        trainer="sft_proof",
        path="/x",
        snapshot_id="snap",
        parent_id=None,
        settings_hash="h",
        figures={},
    )
    plan = plan_step("grpo", settings, "snap", StartingPoints(this_step={"sft_proof": parent}))
    assert plan.parent == parent and plan.starts_from == "sft_proof"
