"""What `dojoflow repos`, `runs`, `metrics` and `sql` print: a table that fits 80
columns on a terminal, CSV when piped, JSON on request; data never read as markup."""

import csv
import io
import json
import re

import pytest

from .cli_store import RUN_ID, invoke, store_with_a_run


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    """One store with a run for the module: every test below only reads it (repos, runs, metrics, a SELECT)."""
    return store_with_a_run(tmp_path_factory.mktemp("cli-output"))


@pytest.mark.parametrize(
    "command", [["repos"], ["runs"], ["metrics"], ["metrics", "--split", "test"], ["sql", "SELECT * FROM runs"]]
)
def test_tables_fit_80_columns(home, command):
    r = invoke(*command, "--home", home, "--format", "table", columns=80)
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert len(lines) >= 3 and max(len(line) for line in lines) <= 80, r.output


def test_repos_table_shows_whole_names_in_curriculum_order(home):
    r = invoke("repos", "--home", home, "--format", "table", columns=80)
    assert [w for line in r.output.splitlines() for w in line.split() if w in ("alpha", "beta")] == ["alpha", "beta"]


def test_piped_output_is_csv_with_every_column_at_full_length(home):
    r = invoke("repos", "--home", home)  # CliRunner's stdout is not a terminal: piped
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    assert r.stderr == "repositories in curriculum order\n"  # the title, off the parseable stream
    assert [row["name"] for row in rows] == ["alpha", "beta"]
    assert rows[0]["url"] == "https://dojoflow.invalid/synthetic/alpha" and len(rows[0]["repo_id"]) > 20
    runs = list(csv.DictReader(io.StringIO(invoke("runs", "--home", home).stdout)))
    assert runs[0]["run_id"] == RUN_ID and runs[0]["status"] == "completed"
    assert json.loads(runs[0]["checkpoints"])["sft"].endswith("checkpoints/sft/sft-step2-000000000000")


def test_json_output_parses(home):
    r = invoke("metrics", "--home", home, "--format", "json", "--trainer", "sft", "--split", "test")
    rows = json.loads(r.stdout)
    assert f"metrics of run {RUN_ID}" in r.stderr
    assert {(m["step"], m["repository"]) for m in rows} == {(1, "alpha"), (2, "alpha"), (2, "beta")}
    assert {m["trainer"] for m in rows} == {"sft"} and {m["split"] for m in rows} == {"test"}


def test_runs_shows_the_checkpoint_paths_of_a_run(home):
    r = invoke("runs", "--home", home, "--run", RUN_ID[:4], "--format", "table", columns=80)
    assert r.exit_code == 0, r.output
    ckpt = home / "checkpoints" / "sft" / "sft-step2-000000000000"
    assert f"checkpoint sft: {ckpt}" in r.output
    assert f"report_path: {home / 'reports' / RUN_ID / 'report.md'}" in r.output


@pytest.mark.parametrize(
    "option, value, valid",
    [
        ("--split", "train", "test, val"),
        ("--trainer", "retreiver", "retriever, sft"),
        ("--repository", "gamma", "alpha, beta"),
    ],
)
def test_metrics_filter_that_names_nothing_is_an_error_listing_the_valid_ones(home, option, value, valid):
    r = invoke("metrics", "--home", home, option, value)
    assert r.exit_code == 2, r.output
    assert f"{value}, {option}: is not a" in r.output and f"use one of: {valid}" in r.output


@pytest.mark.parametrize("name", ["a[/]b", "a[red]b", "a[bold]b[/bold]"])
def test_paths_with_markup_are_printed_as_they_are(tmp_path, name):
    missing = tmp_path / name
    r = invoke("import", missing, "--home", tmp_path / "home")
    assert r.exit_code == 2 and f"{missing}: does not exist" in r.output, r.output


def test_titles_and_cells_with_markup_are_printed_as_they_are(tmp_path):
    from storage.synthetic import write_synthetic_export

    export = write_synthetic_export(tmp_path / "ex[red]port", "q", 4, 2)
    r = invoke("import", export, "--home", tmp_path / "home", "--format", "table")
    assert r.exit_code == 0 and f"imported {export}" in r.output, r.output
    r = invoke("sql", "SELECT '[red]x[/red] [/]' AS s", "--home", tmp_path / "home", "--format", "table")
    assert r.exit_code == 0 and "[red]x[/red] [/]" in r.output, r.output


@pytest.mark.parametrize("columns", [80, 100])
def test_metrics_table_keeps_whole_words_and_the_interval_its_csv_has(tmp_path, columns):
    """At the README's widths a metric name is never split over two lines (it was:
    `top1_majority_ba`/`seline`) and the 95% interval the CSV carries is shown (it was dropped)."""
    from storage import metrics
    from storage.store import Store

    home = store_with_a_run(tmp_path)
    store = Store.open(home)
    repo = metrics.of_run(store, RUN_ID)[0]["repo_id"]
    base = {"repo_id": repo, "trainer": "sft", "split_kind": "random", "split": "test", "count": 40}
    rows = [
        {**base, "metric": "top1_majority_baseline", "value": 0.3, "checkpoint_id": "sft-step2-000000000000"},
        {**base, "metric": "proving_mean_expansions", "value": 12.5, "checkpoint_id": "sft-step2-000000000000"},
        {**base, "metric": "top1_accuracy", "value": 0.25, "ci_low": 0.125, "ci_high": 0.4375, "checkpoint_id": "c"},
    ]
    metrics.record(store, rows, RUN_ID, 2, repo)
    csv_rows = list(csv.DictReader(io.StringIO(invoke("metrics", "--home", home, "--split", "test").stdout)))
    assert {"ci_low", "ci_high"} <= set(csv_rows[0])
    r = invoke("metrics", "--home", home, "--split", "test", "--format", "table", columns=columns)
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert max(len(line) for line in lines) <= columns, r.output
    words = {w for line in lines for w in line.split()}
    for name in ("top1_majority_baseline", "proving_mean_expansions", "top1_accuracy"):
        segments = re.findall(r"[^_]+_?", name)  # a name may break only after a `_`
        pieces = {"".join(segments[i:j]) for i in range(len(segments)) for j in range(i + 1, len(segments) + 1)}
        shown = {w for w in words if w in name and len(w) > 4}  # what of the name is on screen
        assert shown <= pieces and (name in shown or len(shown) > 1), r.output
    assert max(len(line.split()) for line in lines) >= 8, r.output  # the columns, none dropped
    assert "CI" in words and {"0.125", "0.438]"} <= {w.strip("[,") for w in words} | words, r.output
