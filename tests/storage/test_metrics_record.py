"""storage.metrics.record writes a call's rows in a few INSERTs, not one per row (DuckDB's
executemany cost ~8 ms of CPU a row): the rows read back as one-at-a-time inserts left them."""

from __future__ import annotations

from storage import metrics


def _row(repo: str, metric: str, value: float, **extra) -> dict:
    return {
        "repo_id": repo,
        "trainer": "sft",
        "split_kind": "random",
        "split": "test",
        "metric": metric,
        "value": value,
        "count": 2,
        "checkpoint_id": "ck1",
        **extra,
    }


def test_a_call_over_several_inserts_keeps_every_row_and_the_last_of_a_repeated_key(store, monkeypatch):
    monkeypatch.setattr(metrics, "ROWS_PER_INSERT", 2, raising=False)  # 5 distinct rows: 3 statements
    rows = [
        _row("r1", "top1_accuracy", 0.1),
        _row("r1", "completion_loss", 2.5, ci_low=2.0, ci_high=3.0, interval="bootstrap"),
        _row("r2", "top1_accuracy", 0.3),
        _row("r1", "top1_accuracy", 0.2),  # the same key again: replaces the first row, as before
        _row("r3", "top1_accuracy", 0.4, benchmark="bench-1"),
        _row("r3", "completion_loss", 1.5),
    ]
    assert metrics.record(store, rows, "run-1", 1, "r1") == 6
    back = {(r["repo_id"], r["metric"]): r for r in metrics.of_run(store, "run-1")}
    assert {k: r["value"] for k, r in back.items()} == {
        ("r1", "top1_accuracy"): 0.2,
        ("r1", "completion_loss"): 2.5,
        ("r2", "top1_accuracy"): 0.3,
        ("r3", "top1_accuracy"): 0.4,
        ("r3", "completion_loss"): 1.5,
    }
    loss = back[("r1", "completion_loss")]
    assert (loss["ci_low"], loss["ci_high"], loss["interval"], loss["count"]) == (2.0, 3.0, "bootstrap", 2)
    assert back[("r2", "top1_accuracy")]["ci_low"] is None

    # a re-evaluated checkpoint replaces its rows
    metrics.record(store, [_row("r2", "top1_accuracy", 0.9)], "run-1", 1, "r1")
    assert {(r["repo_id"], r["metric"]): r["value"] for r in metrics.of_run(store, "run-1")}[
        ("r2", "top1_accuracy")
    ] == 0.9
