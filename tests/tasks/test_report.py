"""The run report's plot and tables (tasks/report.py): readable colours and numbers."""

from __future__ import annotations

import base64

from tasks.report import PLOT_ALT, PLOT_FILE, inline_plot, metrics_figure, plot_metrics, rounded


def row(step, repo, metric, value, split="test", trainer="sft"):
    return {
        "step": step,
        "repo": repo,
        "repo_id": repo,
        "trainer": trainer,
        "metric": metric,
        "split": split,
        "value": value,
    }


def test_each_repository_has_one_colour_in_every_panel():
    # panel "top1" shows repositories b and c only, panel "loss" a, b and c: by position in
    # each panel, b would be drawn in different colours
    rows = [
        row(1, "b", "top1", 0.1),
        row(2, "c", "top1", 0.2),
        row(1, "a", "loss", 3.0),
        row(1, "b", "loss", 2.0),
        row(2, "c", "loss", 1.0),
    ]
    fig = metrics_figure(rows)
    colours: dict[str, set] = {}
    for ax in fig.axes:
        for line in ax.get_lines():
            colours.setdefault(line.get_label(), set()).add(
                line.get_color() if isinstance(line.get_color(), str) else tuple(line.get_color())
            )
    assert set(colours) == {"a", "b", "c"}
    assert all(len(c) == 1 for c in colours.values()), colours
    assert len({next(iter(c)) for c in colours.values()}) == 3  # and different repositories differ


def test_a_plot_of_only_counts_is_no_plot(tmp_path):
    assert plot_metrics([row(1, "a", "examples", 12.0)], tmp_path / PLOT_FILE) is None


def test_metric_values_are_rounded_to_three_significant_digits():
    assert rounded(0.3333333) == 0.333 and rounded(6.4321) == 6.43 and rounded(1234.5678) == 1230.0
    assert rounded(4) == 4 and rounded("sft") == "sft"


def test_the_ui_markdown_carries_the_plot_as_a_data_uri(tmp_path):
    path = plot_metrics([row(1, "a", "top1", 0.5), row(2, "a", "top1", 0.7)], tmp_path / PLOT_FILE)
    markdown = f"# r\n\n![{PLOT_ALT}]({PLOT_FILE})\n"
    inlined = inline_plot(markdown, path)
    prefix = f"![{PLOT_ALT}](data:image/png;base64,"
    assert inlined.startswith(f"# r\n\n{prefix}")
    data = inlined[len(f"# r\n\n{prefix}") :].split(")")[0]
    assert base64.b64decode(data) == path.read_bytes()
    assert inline_plot(markdown, None) == markdown


def test_a_plot_of_the_same_points_is_copied_from_the_cache_not_drawn_again(tmp_path, monkeypatch):
    import tasks.report as report

    rows = [row(1, "a", "top1", 0.5), row(2, "a", "top1", 0.7), row(1, "a", "examples", 9.0)]
    first = plot_metrics(rows, tmp_path / "run1" / PLOT_FILE, cache=tmp_path / "cache")

    def no_drawing(rows):
        raise AssertionError("drawn again")

    monkeypatch.setattr(report, "metrics_figure", no_drawing)
    again = plot_metrics(list(reversed(rows))[:1] + rows[:2], tmp_path / "run2" / PLOT_FILE, cache=tmp_path / "cache")
    assert again.read_bytes() == first.read_bytes()
    changed = [row(1, "a", "top1", 0.5), row(2, "a", "top1", 0.8)]
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
    from tasks.report import write_report
    from tests.flows.cli_store import RUN_ID, store_with_a_run

    home = store_with_a_run(tmp_path)
    store = Store.open(home, create=False)
    path = home / "checkpoints" / "sft" / "sft-step1-000000000000"
    step = {"step": 1, "name": "alpha", "repo_ids": [r["repo_id"] for r in store.repositories()][:1]}
    trained = {
        "checkpoint": {"path": str(path)},
        "seconds": 1.0,
        "train_state": "Completed",
        "evaluate_state": "Completed",
    }
    result = {"step": 1, "name": "alpha", "trainers": {"sft": trained}, "wall_seconds": 2.0}
    report = write_report(store, home, "sample", RUN_ID, [step], [result], [])
    markdown = report["markdown"]
    assert report["plot"] and markdown.index("## Plot") < markdown.index("## Metrics")
    assert "| `sft-step1-000000000000` |" in markdown and f"`{path}`" not in markdown
    assert f"under `{home / 'checkpoints'}/<trainer>/`" in markdown
