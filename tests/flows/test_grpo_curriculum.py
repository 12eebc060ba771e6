"""examples/grpo.yaml (6 of its 30 SFT steps) on the embedded Prefect server: SFT then GRPO (DAPO)
at a curriculum step of the sample, GRPO starting from that step's SFT checkpoint, rewards from the
replay backend (traced data; no Lean runs), replay pass@k and the step's training rewards recorded;
a rerun is all Cached."""

from __future__ import annotations

from pathlib import Path

from storage import catalog
from storage.store import Store
from tasks.config import PipelineConfig

from .fixtures import train_states

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "grpo.yaml"


def test_sft_then_dapo_per_repository_with_replay_rewards_and_cached_rerun(prefect, tmp_path):
    from flows.curriculum import curriculum

    example = PipelineConfig.from_yaml(EXAMPLE)
    trainers = example.model_dump()["trainers"]
    # 2 SFT steps, not the example's 30, and small evaluations: training and generation are most of
    # this test's time, and nothing here depends on how much SFT learned or how well anything scores
    # (GRPO's groups without reward variance are resampled, then masked); one GRPO step records the
    # step's training rewards, and k stays 2 (replay pass@1 and pass@2).
    trainers["sft"]["training"]["max_steps"] = 2
    trainers["sft"]["evaluation"].update(max_eval_examples=2, max_new_tokens=4)
    trainers["grpo"]["training"]["max_steps"] = 1
    trainers["grpo"]["max_prompts"] = 8
    trainers["grpo"]["evaluation"].update(max_theorems=2, max_new_tokens=8)
    cfg = example.with_overrides(
        {"home": str(tmp_path / "home"), "max_steps": 1, "trainers": trainers}, source="the test"
    )
    first = curriculum(config=cfg)
    assert train_states(first, "sft") == ["Completed"] and train_states(first, "grpo") == ["Completed"]
    step = first["steps"][0]["trainers"]
    assert step["grpo"]["checkpoint"]["parent_id"] == step["sft"]["checkpoint"]["checkpoint_id"]  # init_from: sft
    rows = catalog.query(
        Store.open(tmp_path / "home"),
        "SELECT split, metric, value FROM metrics WHERE metric LIKE 'replay_pass@%' OR metric LIKE 'train_%'",
    ).to_pylist()
    metrics = {(r["split"], r["metric"]) for r in rows}
    assert {
        ("val", "replay_pass@1"),
        ("val", "replay_pass@2"),
        ("train", "train_reward"),
        ("train", "train_accepted"),
    } <= metrics
    assert "replay_pass@1" in Path(first["report"]).read_text()

    second = curriculum(config=cfg)
    assert train_states(second, "sft") == ["Cached"] and train_states(second, "grpo") == ["Cached"]
    assert second["steps"][0]["trainers"]["grpo"]["evaluate_state"] == "Cached"
