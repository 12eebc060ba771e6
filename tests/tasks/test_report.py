"""The run report's plot and tables (tasks/report.py): readable colours and numbers."""

from __future__ import annotations

import base64

from tasks.metric_registry import with_meaning
from tasks.report import PLOT_ALT, PLOT_FILE, inline_plot, metrics_figure, plot_metrics, rounded


def row(step, repo, metric, value, split="test", trainer="sft", learned=None, **more):
    """A metric row as the report reads it: with its declared meaning (tasks/metric_registry.py)."""
    return with_meaning(
        {"step": step, "repo": repo, "repo_id": repo, "step_repo_id": learned or repo, "trainer": trainer,
         "metric": metric, "split": split, "value": value, "checkpoint_id": f"{trainer}{step}", **more}
    )  # fmt: skip


def _three_steps() -> list[dict]:
    """sft and the retriever over three repositories (evaluated on every one seen, val and test),
    a count and a loss, and proving with its baseline: 16-20 panels before."""
    rows = []
    for step, learned in enumerate("abc", start=1):
        for repo in "abc"[:step]:
            for split in ("val", "test"):
                at = {"learned": learned, "split": split}
                top1 = 0.5 if repo == learned else 0.3
                rows += [
                    row(step, repo, "top1_accuracy", top1, ci_low=top1 - 0.1, ci_high=top1 + 0.1, **at),
                    row(step, repo, "top1_majority_baseline", 0.2, **at),
                    row(step, repo, "top4_accuracy", 0.6, **at),
                    row(step, repo, "completion_loss", 3.0, **at),
                    row(step, repo, "examples", 40.0, **at),
                    row(step, repo, "MRR", 40.0, trainer="retriever", **at),
                ]
        rows += [
            row(step, learned, "repl_pass@4", 0.1 * step, trainer="proving", ci_low=0.0, ci_high=0.3),
            row(step, learned, "baseline_repl_pass@4", 0.2, trainer="proving", ci_low=0.1, ci_high=0.4),
            row(step, learned, "proving_mean_seconds", 2.0, trainer="proving"),
        ]
    return rows


def test_one_panel_per_question_with_the_baseline_beside_and_intervals_drawn():
    fig = metrics_figure(_three_steps())
    titles = [ax.get_title() for ax in fig.axes]
    assert [t.split(":")[0] for t in titles] == ["learning", "forgetting", "proving"], titles
    learning, forgetting, proving = fig.axes
    labels = [t.get_text() for t in learning.get_legend().get_texts()]
    assert "sft / top1_accuracy / test" in labels and "top1_majority_baseline (baseline)" in labels, labels
    assert "retriever / MRR / test" in labels and not [x for x in labels if "val" in x or "loss" in x], labels
    assert [t.get_text() for t in proving.get_legend().get_texts()] == [
        "proving / repl_pass@4 / test",
        "baseline_repl_pass@4 (baseline)",
    ]
    for ax in fig.axes:  # every line carries its 95% interval as error bars
        assert ax.containers and all(c.has_yerr and len(c.lines[2]) for c in ax.containers), ax.get_title()
    top1 = next(c for c in learning.containers if c.get_label() == "sft / top1_accuracy / test")
    assert list(top1.lines[0].get_ydata()) == [0.5, 0.5, 0.5]  # on the repository each step learned
    forgot = next(c for c in forgetting.containers if c.get_label() == "sft / top1_accuracy / test / a")
    assert [round(y, 3) for y in forgot.lines[0].get_ydata()] == [-0.2, -0.2]  # 0.5 when learned, 0.3 after
    import matplotlib.pyplot as plt

    plt.close(fig)


def test_a_plot_of_only_counts_is_no_plot(tmp_path):
    assert plot_metrics([row(1, "a", "examples", 12.0)], tmp_path / PLOT_FILE) is None


def test_metric_values_are_rounded_to_three_significant_digits():
    assert rounded(0.3333333) == 0.333 and rounded(6.4321) == 6.43 and rounded(1234.5678) == 1230.0
    assert rounded(4) == 4 and rounded("sft") == "sft"


def test_the_ui_markdown_carries_the_plot_as_a_data_uri(tmp_path):
    path = plot_metrics([row(1, "a", "top1_accuracy", 0.5), row(2, "a", "top1_accuracy", 0.7)], tmp_path / PLOT_FILE)
    markdown = f"# r\n\n![{PLOT_ALT}]({PLOT_FILE})\n"
    inlined = inline_plot(markdown, path)
    prefix = f"![{PLOT_ALT}](data:image/png;base64,"
    assert inlined.startswith(f"# r\n\n{prefix}")
    data = inlined[len(f"# r\n\n{prefix}") :].split(")")[0]
    assert base64.b64decode(data) == path.read_bytes()
    assert inline_plot(markdown, None) == markdown


def test_a_plot_of_the_same_points_is_copied_from_the_cache_not_drawn_again(tmp_path, monkeypatch):
    import tasks.report as report

    rows = [row(1, "a", "top1_accuracy", 0.5), row(2, "a", "top1_accuracy", 0.7), row(1, "a", "examples", 9.0)]
    first = plot_metrics(rows, tmp_path / "run1" / PLOT_FILE, cache=tmp_path / "cache")

    def no_drawing(rows):
        raise AssertionError("drawn again")

    monkeypatch.setattr(report, "metrics_figure", no_drawing)
    again = plot_metrics(list(reversed(rows))[:1] + rows[:2], tmp_path / "run2" / PLOT_FILE, cache=tmp_path / "cache")
    assert again.read_bytes() == first.read_bytes()
    changed = [row(1, "a", "top1_accuracy", 0.5), row(2, "a", "top1_accuracy", 0.8)]
    try:
        plot_metrics(changed, tmp_path / "run3" / PLOT_FILE, cache=tmp_path / "cache")
    except AssertionError as e:
        assert "drawn again" in str(e)  # other points: drawn, not taken from the cache
    else:
        raise AssertionError("a plot of other points came from the cache")


def test_the_report_puts_the_plot_before_the_metrics_table_and_shows_checkpoint_ids(tmp_path):
    """The UI shows a long metrics table first and cuts long cells: the plot comes before the
    table, and the steps table shows a checkpoint's id, with the folder they live in said once."""
    from storage.store import Store
    from tasks.checkpoints import CheckpointRef
    from tasks.plan import Step
    from tasks.report import write_report
    from tasks.run_records import StepResult, TrainerStep
    from tests.flows.cli_store import RUN_ID, store_with_a_run

    home = store_with_a_run(tmp_path)
    store = Store.open(home, create=False)
    path = home / "checkpoints" / "sft" / "sft-step1-000000000000"
    repo_ids = [r["repo_id"] for r in store.repositories()][:1]
    step = Step(step=1, primary=repo_ids[0], name="alpha", repo_ids=repo_ids, seen=repo_ids)
    checkpoint = CheckpointRef(
        checkpoint_id=path.name, trainer="sft", path=str(path), snapshot_id="s", parent_id=None,
        settings_hash="h", figures={},
    )  # fmt: skip
    trained = TrainerStep(checkpoint=checkpoint, seconds=1.0, train_state="Completed", evaluate_state="Completed")
    result = StepResult(step=1, name="alpha", snapshot="", trainers={"sft": trained}, wall_seconds=2.0)
    report = write_report(store, home, "sample", RUN_ID, [step], [result], [])
    markdown = report.markdown
    assert report.plot and markdown.index("## Plot") < markdown.index("## Metrics")
    assert "| `sft-step1-000000000000` |" in markdown and f"`{path}`" not in markdown
    assert f"under `{home / 'checkpoints'}/<trainer>/`" in markdown
