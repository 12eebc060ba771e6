"""The card's settings as used (issue 17): each checkpoint's resolved trainer settings, Dojoflow's
injected defaults and the trainer library's own (TRL's SFTConfig) included, are in the catalog, so
the card shows them and `card --against` names a default that changed, not only the user's keys.

    PYTHONPATH=$PWD HF_HUB_OFFLINE=1 .venv/bin/python -m pytest tests/tasks/test_card_settings.py -q
"""

from __future__ import annotations

import json
from pathlib import Path

from storage import catalog, metrics
from storage.snapshot import build_snapshot
from tasks.card import card_diff, card_markdown
from tasks.checkpoints import code_version, train_step
from tasks.models import TINY_CAUSAL_LM, resolve_model
from tasks.runs import record_run_start
from tasks.sft import SFTSettings
from tests.doubles.sample_store import sample_store

FAST = {"max_steps": 1, "per_device_train_batch_size": 4, "save_strategy": "no", "disable_tqdm": True}


PROVING = {"backend": {"kind": "replay"}, "generator": {"kind": "checkpoint"}, "seed": 7}


def _run(store, home, run_id: str, settings: SFTSettings, snapshot) -> str:
    ref = train_step(home, store, "sft", settings, snapshot, "random")
    config = {"trainers": {"sft": settings.model_dump(mode="json")}, "evaluation": {"proving": PROVING}}
    record_run_start(store, run_id, "curriculum", config)
    row = {"repo_id": snapshot.repo_ids[0], "trainer": "sft", "split_kind": "random", "split": "test"}
    row |= {"metric": "top1_accuracy", "value": 0.25, "count": 4, "checkpoint_id": ref.checkpoint_id}
    metrics.record(store, [row | {"ci_low": 0.05, "ci_high": 0.7, "interval": "wilson"}], run_id, 1, row["repo_id"])
    return ref.checkpoint_id


def test_the_settings_as_used_are_in_the_catalog_and_against_names_a_changed_default(tmp_path):
    home = tmp_path / "home"
    store = sample_store(home)
    snapshot = build_snapshot(store, [store.repo_ids()[0]])
    # the builtin tiny model gets Dojoflow's learning rate 1e-3 (tasks/sft/config.py TINY_MODEL_TRAINING);
    # the same model as a local folder gets TRL's default (2e-5): the user's keys are the same
    local = resolve_model(TINY_CAUSAL_LM, home / "models")
    first = _run(store, home, "A", SFTSettings(training=FAST), snapshot)
    _run(store, home, "B", SFTSettings(model=str(local), training=FAST), snapshot)

    (row,) = catalog.query(
        store, "SELECT resolved_settings FROM checkpoints WHERE config_hash IS NOT NULL LIMIT 1"
    ).to_pylist()
    used = json.loads(row["resolved_settings"])
    assert used["library_file"] == "sft_config.json" and "adam_beta1" in used["library"]  # TRL's whole config
    assert used["dojoflow"]["training"]["max_steps"] == 1

    card = card_markdown(store, "A")
    assert '"learning_rate": 0.001' in card and '"adam_beta1"' in card  # injected and library defaults shown
    diff = card_diff(store, "A", "B")
    assert "trainer.sft.library.learning_rate: 0.001 -> 2e-05" in diff, diff
    assert not [d for d in diff if "output_dir" in d]  # where it was written is no setting

    # the documented one-query trace (docs/evaluation.md) runs as `dojoflow sql` would run it
    from storage.checkpoint_registry import register
    from storage.user_query import check_read_only, run_query

    register(store, "child", "sft", snapshot.snapshot_id, first, "h", "/nowhere", {"gpu_seconds": 1.5})
    row = {"repo_id": snapshot.repo_ids[0], "trainer": "sft", "split_kind": "random", "split": "test"}
    metrics.record(store, [row | {"metric": "MAE", "value": 2.0, "count": 3, "checkpoint_id": "child"}], "A", 2, "x")
    query = _documented_query().replace("'RUN'", "'A'")
    check_read_only(query)
    rows = {r["metric"]: r for r in run_query(store, query, 60).to_pylist()}
    top1, mae = rows["top1_accuracy"], rows["MAE"]
    assert (top1["value"], top1["ci_low"], top1["ci_high"], top1["interval"], top1["count"]) == (
        0.25,
        0.05,
        0.7,
        "wilson",
        4,
    )
    assert top1["parent_chain"] == first and mae["parent_chain"] == f"child <- {first}"
    assert top1["repositories"].endswith("(Lean v4.20.0)") and " @ " in top1["repositories"]
    assert top1["git_commit"] == code_version()["git_commit"] and top1["git_dirty"] in (True, False)
    assert top1["verifier_rule_version"] and top1["dojoflow_version"] and top1["wall_seconds"] is None
    assert json.loads(top1["settings_as_used"])["library"]["learning_rate"] == 0.001
    assert (top1["backend"], top1["backend_version"]) == ("replay", f"dojoflow {top1['dojoflow_version']}")
    assert json.loads(top1["generator"]) == {"kind": "checkpoint"} and json.loads(top1["seed"]) == 7
    assert json.loads(mae["training_gpu_seconds"]) == 1.5
    # the per-theorem counterpart: theorem_results rows with the same provenance columns
    from storage.theorem_results import record_results

    theorem = {"repo_id": "r", "theorem_id": "t", "file_path": "F.lean", "full_name": "T.t", "split": "test"}
    theorem |= {"prover": "model", "checker": "replay", "status": "proved", "n": 1, "c": 1, "k": 1}
    record_results(store, [theorem], "A", 1, first, "random")
    (found,) = run_query(store, "SELECT status, git_commit, snapshot_id, config FROM theorem_ledger", 60).to_pylist()
    assert found["status"] == "proved" and found["snapshot_id"] == snapshot.snapshot_id and found["config"]


def _documented_query() -> str:
    text = (Path(__file__).resolve().parents[2] / "docs" / "evaluation.md").read_text()
    return text.split("The full trace of a metric row", 1)[1].split("```sql\n", 1)[1].split("```", 1)[0]
