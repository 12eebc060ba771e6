"""`dojoflow run examples/benchmarks.yaml` (issue 17, done when): the shipped benchmark's
planted near-duplicate leaves training, and the report and the results card show the
contamination report, metrics with intervals and the provenance. Replay and tiny models;
no Lean is involved in any figure here.

    PYTHONPATH=$PWD HF_HUB_OFFLINE=1 .venv/bin/python -m pytest tests/flows/test_benchmarks.py -q
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from storage.store import Store
from tasks.config import PipelineConfig

from .fixtures import heap_frozen

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "benchmarks.yaml"


@pytest.fixture(scope="module")
def two_steps(prefect, tmp_path_factory) -> tuple[dict, Path]:
    """One run of the example's first two steps (the flow's result, its home), read by both tests below."""
    from flows.curriculum import curriculum

    home = tmp_path_factory.mktemp("benchmarks") / "home"
    example = PipelineConfig.from_yaml(EXAMPLE)
    trainers = example.model_dump()["trainers"]
    # One SFT step (not the example's 2) and 2 SFT evaluation examples of at most 4 new tokens: the
    # tests read contamination, the proving figures and the card, not what SFT learned or scores.
    trainers["sft"]["training"]["max_steps"] = 1
    trainers["sft"]["evaluation"].update(max_eval_examples=2, max_new_tokens=4)
    config = example.with_overrides({"home": str(home), "max_steps": 2, "trainers": trainers}, "test")
    with heap_frozen():  # two trainings, each starting with a full garbage collection (fixtures.heap_frozen)
        return curriculum(config=config), home


def test_the_benchmarks_example_excludes_the_planted_copy_and_the_card_shows_it(two_steps):
    result, home = two_steps
    card = (Path(result["report"]).parent / "card.md").read_text()
    report = Path(result["report"]).read_text()
    for text in (card, report):
        assert "## Contamination" in text and "against `mini-bench` (6 statements" in text
        assert (
            "| ListLemmas.rev_append | same statement as benchmark mini-bench: planted_rev_concat | 1 |" in text
        )  # similarity 1.0, as tasks/formatting.number writes it
        assert "Excluded from training: 1." in text
        # the benchmark is tried at both steps; a statement that cannot be tried is listed once, not once per step
        # (named with its fingerprint)
        assert (
            len(re.findall(r"\| benchmark:mini-bench \(fingerprint `\w+`\) \| benchmark \| amc12_2000_p5 \|", text))
            == 1
        )
        assert "### Theorems that could not be tried (5)" in text
    assert "replay_pass@1" in card and "(n=5)" in card and "## Provenance" in card and "git commit" in card
    store = Store.open(home)
    assert len(store.repo_ids()) == 3  # the sample: the copy left the snapshot, not the store


def test_a_benchmark_file_that_does_not_parse_stops_the_run_before_anything_is_written(tmp_path):
    from typer.testing import CliRunner

    from flows.cli import app

    bench = tmp_path / "bench.jsonl"
    bench.write_text('{"name": "a", "statement": "theorem a : True"}\n{"name": "b",\n')
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text("sources: [{sample: NatBasics}]\nbenchmarks: [{name: mine, path: bench.jsonl}]\n")
    r = CliRunner().invoke(app, ["run", str(cfg), "--home", str(tmp_path / "home")], env={"COLUMNS": "200"})
    assert r.exit_code == 2, r.output
    assert (
        "bench.jsonl" in r.output and "line 2 is not valid JSON" in r.output and len(r.output.strip().splitlines()) == 1
    )
    assert not (tmp_path / "home").exists()  # nothing written


def test_the_benchmarks_example_evaluates_on_the_benchmark_and_every_figure_names_its_fingerprint(two_steps):
    from storage import catalog
    from storage.theorem_results import read_results

    result, home = two_steps  # the run above; the metrics checked are step 1's, the rest hold at both steps
    store = Store.open(home)
    fp = json.loads(next((store.root / "benchmarks").glob("*.json")).read_text())["fingerprint"]
    rows = catalog.query(
        store,
        "SELECT metric, value, count, benchmark FROM metrics"
        " WHERE run_id = $r AND repo_id = 'benchmark:mini-bench' AND step = 1",
        params={"r": result["run_id"]},
    ).to_pylist()
    by = {r["metric"]: r for r in rows}
    assert {r["benchmark"] for r in rows} == {fp} and by["replay_pass@1"]["count"] == 1  # the planted copy only
    assert by["proving_untried"]["value"] == 5.0 and "baseline_replay_pass@1" in by
    per_theorem = [r for r in read_results(store, result["run_id"]) if r["repo_id"] == "benchmark:mini-bench"]
    assert {r["benchmark"] for r in per_theorem} == {fp}
    assert {r["via"] for r in per_theorem if r["status"] != "untried"} == {
        f"{r['repo_id']}:ListLemmas.rev_append" for r in store.repositories() if r["name"] == "ListLemmas"
    }
    card = (Path(result["report"]).parent / "card.md").read_text()
    report = Path(result["report"]).read_text()
    for text in (card, report):
        assert f"benchmark:mini-bench (fingerprint `{fp}`) | benchmark | replay_pass@1" in text
        assert "replay answers from traced proofs only" in text  # why the miniF2F statements were not tried


def test_a_benchmark_repeating_another_under_a_new_name_is_warned_naming_both_files_and_lines(tmp_path):
    from typer.testing import CliRunner

    from flows.cli import app

    (tmp_path / "one.jsonl").write_text('{"name": "a", "statement": "theorem a (n : Nat) : n + 0 = n"}\n')
    (tmp_path / "two.jsonl").write_text(
        '{"name": "z", "statement": "theorem z : True"}\n{"name": "b", "statement": "theorem b (m : Nat) : m + 0 = m"}\n'
    )
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(  # and a proving evaluation naming a benchmark nobody declared: the run stops there
        "sources: [{sample: NatBasics}]\n"
        "benchmarks: [{name: one, path: one.jsonl}, {name: two, path: two.jsonl}]\n"
        "evaluation: {proving: {backend: {kind: replay}, benchmarks: [three]}}\n"
    )
    r = CliRunner().invoke(app, ["run", str(cfg), "--home", str(tmp_path / "home")], env={"COLUMNS": "300"})
    assert r.exit_code == 2, r.output
    assert f"warning: {tmp_path / 'two.jsonl'} (line 2, b) repeats a statement of benchmark `one` " in r.output
    assert f"({tmp_path / 'one.jsonl'}, line 1)" in r.output
    assert "error: evaluation.proving.benchmarks: names three, which the `benchmarks:` section does not declare" in (
        r.output
    )
    assert not (tmp_path / "home").exists()  # nothing written
