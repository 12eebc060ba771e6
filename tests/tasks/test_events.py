"""The events' figures (tasks/events.py), without Prefect: which metric regressed, by how much."""

from __future__ import annotations

import importlib

from tasks import events
from tasks.metric_registry import with_meaning

# the modules that declare the metrics these rows name (tasks/metric_registry.py)
for _module in ("tasks.progress.evaluate", "tasks.retriever.evaluate", "tasks.sft.evaluate", "tasks.proving.evaluate"):
    importlib.import_module(_module)


def row(step, repo, metric, value, low=None, high=None, learned_at=None, split="test"):
    """A metric row as storage.metrics.of_run gives it: with the meaning declared for `metric`."""
    return with_meaning(
        {
            "step": step,
            "step_repo_id": learned_at or repo,
            "repo_id": repo,
            "repository": repo.upper(),
            "trainer": "t",
            "split_kind": "random",
            "split": split,
            "metric": metric,
            "value": value,
            "count": 10,
            "ci_low": low,
            "ci_high": high,
            "checkpoint_id": f"c{step}",
        }
    )


def test_lower_is_better_regresses_above_the_interval_plus_margin():
    rows = [row(1, "a", "MAE", 1.0, 0.8, 1.2), row(2, "a", "MAE", 1.3, learned_at="b")]
    [r] = events.regressions(rows, 2, 0.05)
    assert (r.direction, r.threshold, r.worse_by) == ("lower", 1.25, 0.3)
    assert events.regressions(rows, 2, 0.1) == []  # 1.3 is not above 1.2 + 0.1


def test_without_an_interval_the_value_when_learned_is_the_reference():
    rows = [row(1, "a", "completion_loss", 2.0), row(2, "a", "completion_loss", 2.01, learned_at="b")]
    assert [r.worse_by for r in events.regressions(rows, 2, 0.0)] == [0.01]
    assert events.regressions(rows, 2, 0.02) == []


def test_counts_improvements_the_newest_repository_and_other_steps_never_regress():
    rows = [
        row(1, "a", "proving_theorems", 10.0),
        row(2, "a", "proving_theorems", 1.0, learned_at="b"),  # a count: no direction
        row(1, "a", "top1_accuracy", 0.5, 0.4, 0.6),
        row(2, "a", "top1_accuracy", 0.9, learned_at="b"),  # better
        row(2, "b", "top1_accuracy", 0.1),  # learned now: nothing to compare with
        row(3, "a", "top1_accuracy", 0.0, learned_at="c"),  # another step than the one asked
    ]
    assert events.regressions(rows, 2, 0.0) == []
    assert [(r.repo_id, r.step) for r in events.regressions(rows, 3, 0.0)] == [("a", 3)]


def test_each_event_names_its_resource_and_carries_the_run():
    spec = events.metric_regressed(
        events.regressions([row(1, "a", "MRR", 50.0), row(2, "a", "MRR", 10.0, learned_at="b")], 2, 1.0)[0], "r1", "p"
    )
    assert spec.event == "dojoflow.metric.regressed" and spec.resource["prefect.resource.id"] == "dojoflow.repo.A"
    assert spec.payload["run_id"] == "r1" and {r["prefect.resource.id"] for r in spec.related} == {
        "dojoflow.run.r1",
        "dojoflow.checkpoint.c2",
    }
    from tasks.proving.records import SearchRecord

    common = {"repo_id": "x", "split": None, "checker": "replay"}
    records = [
        SearchRecord(**common, theorem_id="a", full_name="T.a", proof=["simp"]),
        SearchRecord(**common, theorem_id="b", full_name="T.b", proof=None),
    ]
    found = events.proof_found("r2", "ck", records, [{"full_name": "T.c"}], {"x": "Nat"})
    assert found.payload["repositories"] == {"Nat": {"tried": 2, "proved": 1}}
    assert (found.payload["tried"], found.payload["proved"], found.payload["untried"]) == (2, 1, 1)
    assert found.payload["theorems"] == ["T.a"] and found.resource["prefect.resource.id"] == "dojoflow.run.r2"
