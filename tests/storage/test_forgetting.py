"""The catalog's `forgetting` views (storage/forgetting.py) and the interval columns of
`metrics`: every trainer's forgetting is one query, by the textbook definitions.

    PYTHONPATH=$PWD .venv/bin/python -m pytest tests/storage/test_forgetting.py -q
"""

from __future__ import annotations

import pytest

from storage import catalog, forgetting, metrics
from storage.store import Store
from storage.theorem_results import read_results, record_results
from tasks.metric_registry import meaning, with_meaning


def _rows(trainer, metric, table):
    """table: {step: {repo: value}}; repo `r{step}` is the one learned at `step`."""
    out = []
    for step, values in table.items():
        for repo, value in values.items():
            out.append(
                {
                    "step": step,
                    "repo_id": repo,
                    "trainer": trainer,
                    "split_kind": "random",
                    "split": "test",
                    "metric": metric,
                    "value": value,
                    "count": 10,
                    "checkpoint_id": f"{trainer}-{step}",
                }
            )
    return out


@pytest.fixture
def store(tmp_path):
    store = Store.open(tmp_path / "home")
    catalog.ensure(store)
    accuracy = {1: {"r1": 0.5}, 2: {"r1": 0.7, "r2": 0.4}, 3: {"r1": 0.3, "r2": 0.6, "r3": 0.9}}
    loss = {1: {"r1": 2.0}, 2: {"r1": 1.0, "r2": 3.0}, 3: {"r1": 1.5, "r2": 2.5, "r3": 1.0}}
    mae = {1: {"r1": 1.0}, 2: {"r1": 3.0, "r2": 2.0}, 3: {"r1": 5.0, "r2": 1.0, "r3": 4.0}}
    majority = {1: {"r1": 0.2}, 2: {"r1": 0.2, "r2": 0.3}, 3: {"r1": 0.2, "r2": 0.3, "r3": 0.1}}
    table = (
        _rows("sft", "top1_accuracy", accuracy)
        + _rows("sft", "completion_loss", loss)
        + _rows("sft", "top1_majority_baseline", majority)
        + _rows("progress", "MAE", mae)
    )
    for step in (1, 2, 3):
        rows = [r for r in table if r["step"] == step]
        metrics.record(store, [with_meaning(r) for r in rows], "run-1", step, f"r{step}")
    return store


def test_forgetting_and_backward_transfer_follow_their_definitions_for_every_trainer(store):
    per, summary = forgetting.of_run(store, "run-1")
    top1 = {r["repo_id"]: r for r in per if r["metric"] == "top1_accuracy"}
    assert (top1["r1"]["learned_step"], top1["r1"]["value_when_learned"], top1["r1"]["best"]) == (1, 0.5, 0.7)
    assert top1["r1"]["latest"] == 0.3 and top1["r1"]["forgetting"] == pytest.approx(0.4)  # 0.7 - 0.3
    assert top1["r1"]["backward_transfer"] == pytest.approx(-0.2)  # 0.3 - 0.5
    assert top1["r2"]["forgetting"] == pytest.approx(-0.2) and top1["r2"]["backward_transfer"] == pytest.approx(0.2)
    assert top1["r3"]["forgetting"] is None  # learned at the last step: nothing to forget yet
    s = {r["trainer"]: r for r in summary if r["metric"] == "top1_accuracy"}
    assert s["sft"]["average_forgetting"] == pytest.approx(0.1) and s["sft"]["repositories"] == 2
    assert s["sft"]["backward_transfer"] == pytest.approx(0.0)
    # lower is better for a loss: r1 went 2.0 -> 1.0 (best) -> 1.5: forgot 0.5, improved 0.5 on when learned
    loss = {r["repo_id"]: r for r in per if r["metric"] == "completion_loss"}
    assert loss["r1"]["best"] == 1.0 and loss["r1"]["forgetting"] == pytest.approx(0.5)
    assert loss["r1"]["backward_transfer"] == pytest.approx(0.5)
    assert loss["r2"]["backward_transfer"] == pytest.approx(0.5)  # 3.0 -> 2.5


def test_lower_is_better_is_declared_per_metric_and_data_properties_are_not_forgotten(store):
    per, _ = forgetting.of_run(store, "run-1")
    # the progress model's MAE went 1 -> 3 -> 5 on r1: it got worse, so forgetting 4 (best 1, latest 5)
    # is positive and backward transfer -4 (4 steps worse than when learned) is negative
    mae = {r["repo_id"]: r for r in per if r["metric"] == "MAE"}
    assert mae["r1"]["best"] == 1.0 and mae["r1"]["forgetting"] == pytest.approx(4.0)
    assert mae["r1"]["backward_transfer"] == pytest.approx(-4.0)
    assert mae["r2"]["forgetting"] == pytest.approx(-1.0) and mae["r2"]["backward_transfer"] == pytest.approx(1.0)
    assert not [r for r in per if r["metric"] == "top1_majority_baseline"]  # a property of the data


@pytest.mark.parametrize(
    ("metric", "way"),
    [
        ("completion_loss", "lower"),
        ("MAE", "lower"),
        ("MSE", "lower"),
        ("top1_accuracy", "higher"),
        ("top5_accuracy", "higher"),
        ("spearman", "higher"),
        ("R@10", "higher"),
        ("MRR", "higher"),
        ("lean_pass@4", "higher"),
        ("baseline_replay_pass@1", None),  # a baseline is no trained model: nothing to forget
        ("train_reward", "higher"),
        ("train_accepted", "higher"),
        ("train_frac_reward_zero_std", None),
        ("top1_majority_baseline", None),
        ("examples", None),
        ("gold_missing", None),
        ("proving_mean_seconds", None),
        ("baseline_proving_untried", None),
        ("proving_gpu_seconds", None),
    ],
)
def test_every_metric_the_trainers_emit_has_one_declared_direction(metric, way):
    declared = meaning(metric)  # tasks/metric_registry.py, declared where each is computed
    assert (declared["direction"] if declared["kind"] == "score" else None) == way


def test_metric_intervals_are_stored_and_read_back(store):
    row = {**_rows("proving", "replay_pass@1", {1: {"r1": 0.25}})[0], "ci_low": 0.1, "ci_high": 0.47}
    metrics.record(store, [{**row, "interval": "wilson"}], "run-2", 1, "r1")
    (back,) = metrics.of_run(store, "run-2")
    assert (back["ci_low"], back["ci_high"], back["interval"], back["count"]) == (0.1, 0.47, "wilson", 10)


def test_per_theorem_results_are_recorded_once_and_read_back(store):
    row = {
        "repo_id": "r1",
        "theorem_id": "t1",
        "file_path": "F.lean",
        "full_name": "T.t1",
        "split": "test",
        "prover": "model",
        "checker": "replay",
        "generator": "checkpoint",
        "status": "proved",
        "n": 2,
        "c": 1,
        "k": 2,
        "pass_at_1": 0.5,
        "pass_at_k": 1.0,
        "errors": 0,
        "expansions": 3.0,
        "seconds": 0.5,
    }
    for _ in range(2):
        record_results(
            store, [row, {**row, "prover": "baseline", "c": 0, "status": "failed"}], "run-3", 1, "ck", "random"
        )
    found = read_results(store, "run-3")
    assert [(r["prover"], r["status"], r["pass_at_1"]) for r in found] == [
        ("baseline", "failed", 0.5),
        ("model", "proved", 0.5),
    ]
