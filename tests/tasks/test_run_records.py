"""The typed run records (tasks/run_records.py) read what the dicts before them left in the task
cache: the evaluate task's result cached by an earlier version (a list of dicts, as Prefect's JSON
serializer stored it) records the same catalog rows as the model; a model's cached JSON reads back
as the model, and even a model whose class Prefect cannot import any more reads back from its data."""

from __future__ import annotations

import pytest
from prefect.serializers import JSONSerializer
from pydantic import ValidationError

from storage import catalog, metrics
from storage.store import Store
from tasks.checkpoints import CheckpointRef
from tasks.evaluation import record_metrics
from tasks.run_records import MetricRow, StepResult, TrainerStep

# evaluate_step's row as main wrote it at 886c4b0 (Metric.to_dict() with its meaning, then trainer,
# split kind and checkpoint), and at 864d095 (before the meaning columns: `asdict(Metric)` only)
WITH_MEANING = {
    "repo_id": "r1", "split": "test", "metric": "top1_accuracy", "value": 0.5, "count": 40,
    "ci_low": 0.35, "ci_high": 0.65, "interval": "wilson",
    "direction": "higher", "kind": "score", "unit": "share", "question": "learning",
    "baseline_metric": "top1_majority_baseline",
    "trainer": "sft", "split_kind": "random", "checkpoint_id": "c1",
}  # fmt: skip
BEFORE_MEANING = {k: v for k, v in WITH_MEANING.items() if k not in metrics.MEANING_COLUMNS}


def _recorded(tmp_path, name, rows) -> list[dict]:
    store = Store.open(tmp_path / name)
    catalog.ensure(store)
    record_metrics(store, rows, "run", 1, "r1")
    return [{k: v for k, v in r.items() if k != "recorded_at"} for r in metrics.of_run(store, "run")]


def test_an_evaluation_cached_as_dicts_records_what_its_model_records(tmp_path):
    import tasks.sft.evaluate  # noqa: F401  (declares top1_accuracy)

    serializer = JSONSerializer()
    old = serializer.loads(serializer.dumps([WITH_MEANING, BEFORE_MEANING]))  # what the cache gives back
    assert all(isinstance(r, dict) for r in old)
    assert MetricRow.of(old[0]) == MetricRow.of(old[1]).declared() == MetricRow(**WITH_MEANING)
    from_cache = _recorded(tmp_path, "old", old)
    assert from_cache == _recorded(tmp_path, "new", [MetricRow(**WITH_MEANING)] * 2)
    assert from_cache[0]["direction"] == "higher" and from_cache[0]["ci_low"] == 0.35


def test_a_cached_model_reads_back_as_the_model_and_a_moved_class_from_its_data():
    serializer = JSONSerializer()
    row = MetricRow(**WITH_MEANING)
    assert serializer.loads(serializer.dumps([row])) == [row]
    moved = serializer.dumps([row]).replace(b"tasks.run_records.MetricRow", b"tasks.gone.MetricRow")
    (raw,) = serializer.loads(moved)  # Prefect gives the JSON back when it cannot import the class
    assert set(raw) == {"__class__", "data"} and MetricRow.of(raw) == row
    with pytest.raises(ValidationError):
        MetricRow.of({**WITH_MEANING, "valeu": 1.0})  # a misspelt column is refused, not dropped


def test_a_step_result_as_json_is_the_dict_the_report_and_the_terminal_read():
    ref = CheckpointRef(
        checkpoint_id="c1", trainer="sft", path="/h/checkpoints/sft/c1", snapshot_id="s1", parent_id=None,
        settings_hash="h", figures={"seconds": 1.5},
    )  # fmt: skip
    rounds = [{"round": 1, "searched_with": "c0", "trained": None, "attempted": 3.0}]
    step = StepResult(
        step=1, name="NatBasics", snapshot="s1", wall_seconds=2.0,
        trainers={"sft": TrainerStep(checkpoint=ref, seconds=1.5, train_state="Completed", evaluate_state="Cached",
                                     metrics=4, expert_rounds=rounds)},
    )  # fmt: skip
    as_json = step.model_dump(mode="json")
    assert as_json["trainers"]["sft"]["checkpoint"] == ref.to_dict()
    assert as_json["trainers"]["sft"]["expert_rounds"] == rounds and StepResult.of(as_json) == step


def test_a_metric_row_has_the_metrics_tables_columns_less_those_recording_adds(tmp_path):
    import tasks.sft.evaluate  # noqa: F401  (declares top1_accuracy)

    _recorded(tmp_path, "home", [MetricRow(**WITH_MEANING)])  # the table, with every added column
    columns = catalog.query(
        Store.open(tmp_path / "home"), "SELECT column_name FROM duckdb_columns() WHERE table_name = 'metrics'"
    ).to_pylist()
    added = {"run_id", "step", "step_repo_id", "recorded_at"}
    assert {c["column_name"] for c in columns} - added == set(MetricRow.model_fields)


def test_an_evaluations_metric_becomes_the_row_evaluate_step_wrote_and_keeps_its_benchmark():
    """`MetricRow.of_metric`, the one conversion evaluate_step and the proving task share: the row
    main wrote as a dict (WITH_MEANING), and a proving figure's benchmark fingerprint kept."""
    from tasks.proving import evaluate  # noqa: F401 (declares the pass@k metrics)
    from tasks.trainers.base import Metric

    m = Metric("r1", "test", "top1_accuracy", 0.5, 40, 0.35, 0.65, "wilson")
    assert MetricRow.of_metric(m, "sft", "random", "c1") == MetricRow.of(WITH_MEANING)
    on_benchmark = Metric("benchmark:b", "benchmark", "replay_pass@1", 0.5, 2, benchmark="fp")
    row = MetricRow.of_metric(on_benchmark, "proving", "random", "c1")
    assert row.benchmark == "fp" and row.direction == "higher" and row.trainer == "proving"
