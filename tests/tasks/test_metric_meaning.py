"""A metric declared once (issue 26, room 5): each metric's meaning is declared where it is
computed (tasks/metric_registry.py), travels with its row, and every reader takes it from
there; an undeclared name is an error where it is produced, not a row that silently drops
out of forgetting; a figure below its baseline is marked in the card.

    PYTHONPATH=$PWD .venv/bin/python -m pytest tests/tasks/test_metric_meaning.py -q
"""

from __future__ import annotations

import pytest

from storage import catalog, forgetting, metrics
from storage.store import Store
from tasks.card import card_markdown
from tasks.evaluation import record_metrics
from tasks.metric_registry import UndeclaredMetric, declarations, meaning, register_metric, unregister_metric
from tasks.runs import record_run_start
from tasks.trainers.base import Metric


def _row(step, repo, metric, value, **more):
    return {"repo_id": repo, "trainer": "sft", "split_kind": "random", "split": "test",
            "metric": metric, "value": value, "count": 40, "checkpoint_id": f"c{step}", **more}  # fmt: skip


def test_an_undeclared_metric_is_an_error_where_it_is_produced():
    with pytest.raises(UndeclaredMetric, match="'top1_acuracy' is not declared"):
        Metric("r", "test", "top1_acuracy", 0.5, 10)  # a typo: before, a row that silently left forgetting
    assert Metric("r", "test", "top5_accuracy", 0.5, 10).to_dict()["direction"] == "higher"


def test_recording_refuses_an_undeclared_metric_and_nothing_is_written(tmp_path):
    store = Store.open(tmp_path / "home")
    catalog.ensure(store)
    with pytest.raises(UndeclaredMetric):
        record_metrics(store, [_row(1, "a", "top1_accuracy", 0.5), _row(1, "a", "mystery", 1.0)], "run", 1, "a")
    assert metrics.of_run(store, "run") == []


def test_forgetting_reads_the_declaration_not_the_name(tmp_path):
    """A trainer's own skill, named as no pattern knew (`lemma_recall`), is forgotten by its
    declared direction; before, a name matching no pattern was left out without a word."""
    register_metric("lemma_recall", direction="lower", kind="score", unit="share", question="learning")
    try:
        store = Store.open(tmp_path / "home")
        catalog.ensure(store)
        rows = {1: [_row(1, "a", "lemma_recall", 0.2)], 2: [_row(2, "a", "lemma_recall", 0.6)]}
        rows[2].append(_row(2, "b", "lemma_recall", 0.1))
        for step, at in rows.items():
            record_metrics(store, at, "run", step, "a" if step == 1 else "b")
        per, _ = forgetting.of_run(store, "run")
        (a,) = [r for r in per if r["repo_id"] == "a"]
        assert a["forgetting"] == pytest.approx(0.4)  # lower is better: 0.2 -> 0.6 is forgotten
    finally:
        unregister_metric("lemma_recall")


def test_every_declaration_a_reader_needs_is_complete():
    for template, d in declarations().items():
        m = meaning(template.replace("{k}", "4").replace("{checker}", "repl").replace("{metric}", "MRR"))
        assert (m["kind"] in ("score", "baseline")) == (m["direction"] is not None) or m["kind"] == "diagnostic"
        if d.baseline:
            assert meaning(m["baseline_metric"])["kind"] == "baseline", template


def test_the_card_marks_a_figure_below_its_baseline(tmp_path):
    store = Store.open(tmp_path / "home")
    catalog.ensure(store)
    record_run_start(store, "run", "curriculum", {"name": "demo"})
    rows = [
        _row(1, "a", "top1_accuracy", 0.1, ci_low=0.05, ci_high=0.2, interval="wilson"),
        _row(1, "a", "top1_majority_baseline", 0.3),
        _row(1, "a", "top4_accuracy", 0.5),
    ]
    record_metrics(store, rows, "run", 1, "a")
    card = card_markdown(store, "run")
    (line,) = [x for x in card.splitlines() if "| top1_accuracy |" in x]
    assert "below baseline" in line and "top1_majority_baseline 0.3" in line, card
    (other,) = [x for x in card.splitlines() if "| top4_accuracy |" in x]
    assert "below baseline" not in other
    assert not [x for x in card.splitlines() if x.startswith("| sft") and "| top1_majority_baseline |" in x]
