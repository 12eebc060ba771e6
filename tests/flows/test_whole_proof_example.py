"""examples/whole-proof.yaml, smaller: the sample's statement sets imported, whole-proof SFT trained on
the traced whole proofs, evaluated by whole-proof sampling through replay (no Lean: every figure is
named replay's), and the benchmark's leaderboard line printed with its verdict level saying so."""

from __future__ import annotations

from pathlib import Path

from storage import catalog
from storage.statement_sets import list_sets
from storage.store import Store
from tasks.config import PipelineConfig

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "whole-proof.yaml"


def test_the_example_trains_whole_proofs_evaluates_by_replay_and_prints_a_leaderboard_line(prefect, tmp_path):
    from flows.curriculum import curriculum
    from tasks.leaderboard import leaderboard_rows

    config = PipelineConfig.from_yaml(EXAMPLE)
    sft = config.trainers.sft_proof.model_dump()
    sft["training"].update(max_steps=4, logging_steps=2)
    sft["evaluation"].update(k=2, max_theorems=2, max_proof_tokens=8)
    proving = config.evaluation.proving.model_dump()
    proving.update(num_tactics=2, k=2, max_theorems=2)
    proving["generator"]["max_proof_tokens"] = 8
    config = config.with_overrides(
        {
            "home": str(tmp_path / "home"),
            "trainers": {**config.trainers.model_dump(), "sft_proof": sft},
            "evaluation": {**config.evaluation.model_dump(), "proving": proving},
        },
        "test",
    )
    result = curriculum(config=config)
    store = Store.open(tmp_path / "home")
    assert {m["name"] for m in list_sets(store)} == {"nat-pset", "mini-bench"}
    metrics = catalog.query(
        store, "SELECT trainer, metric FROM metrics WHERE run_id = $run", params={"run": result["run_id"]}
    ).to_pylist()
    names = {m["metric"] for m in metrics if m["metric"].endswith(("pass@1", "pass@2"))}
    assert {"replay_pass@2", "baseline_replay_pass@2"} <= names and not any(n.startswith("repl_") for n in names)
    own = {m["metric"] for m in metrics if m["trainer"] == "sft_proof"}  # its own evaluation, beside the proving one
    assert {"sampled_replay_pass@2", "sampled_baseline_replay_pass@2"} <= own
    (line,) = [r["line"] for r in leaderboard_rows(store, run_id=result["run_id"])]
    assert line.startswith("mini-bench [") and "/4 solved" in line and "pass@2" in line
    assert "replay (traced proofs, no Lean: a lower bound)" in line and "Lean v4.20.0" in line and "sft_proof" in line
