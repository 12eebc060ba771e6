"""The card's settings as used (issue 17): each checkpoint's resolved trainer settings, Dojoflow's
injected defaults and the trainer library's own (TRL's SFTConfig) included, are in the catalog, so
the card shows them and `card --against` names a default that changed, not only the user's keys.

    PYTHONPATH=$PWD HF_HUB_OFFLINE=1 .venv/bin/python -m pytest tests/tasks/test_card_settings.py -q
"""

from __future__ import annotations

import json

from storage import catalog, metrics
from storage.snapshot import build_snapshot
from tasks.card import card_diff, card_markdown
from tasks.checkpoints import train_step
from tasks.models import TINY_CAUSAL_LM, resolve_model
from tasks.runs import record_run_start
from tasks.sft import SFTSettings
from tests.doubles.sample_store import sample_store

FAST = {"max_steps": 1, "per_device_train_batch_size": 4, "save_strategy": "no", "disable_tqdm": True}


def _run(store, home, run_id: str, settings: SFTSettings, snapshot) -> None:
    ref = train_step(home, store, "sft", settings, snapshot, "random")
    record_run_start(store, run_id, "curriculum", {"trainers": {"sft": settings.model_dump(mode="json")}})
    row = {"repo_id": snapshot.repo_ids[0], "trainer": "sft", "split_kind": "random", "split": "test"}
    row |= {"metric": "top1_accuracy", "value": 0.0, "count": 1, "checkpoint_id": ref.checkpoint_id}
    metrics.record(store, [row], run_id, 1, snapshot.repo_ids[0])


def test_the_settings_as_used_are_in_the_catalog_and_against_names_a_changed_default(tmp_path):
    home = tmp_path / "home"
    store = sample_store(home)
    snapshot = build_snapshot(store, [store.repo_ids()[0]])
    # the builtin tiny model gets Dojoflow's learning rate 1e-3 (tasks/sft/config.py TINY_MODEL_TRAINING);
    # the same model as a local folder gets TRL's default (2e-5): the user's keys are the same
    local = resolve_model(TINY_CAUSAL_LM, home / "models")
    _run(store, home, "A", SFTSettings(training=FAST), snapshot)
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
