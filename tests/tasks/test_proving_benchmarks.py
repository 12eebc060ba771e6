"""The proving evaluation on a declared benchmark (issue 17 §2): its statements are tried as
a group of their own, every row computed on them carries the benchmark's fingerprint, and
each row says what evaluated it. Replay decides every proof here (no Lean): it tries a
benchmark statement only through the store theorem with the same statement fingerprint
(its traced proof), and counts the others as untried, with the reason.

    PYTHONPATH=$PWD HF_HUB_OFFLINE=1 .venv/bin/python -m pytest tests/tasks/test_proving_benchmarks.py -q
"""

from __future__ import annotations

from pathlib import Path

import pytest

from storage.contamination import save_benchmark
from storage.errors import InputError
from storage.snapshot import SnapshotSettings, build_snapshot
from storage.theorem_results import read_results, record_results
from tasks.benchmarks import BenchmarkConfig, load_benchmarks
from tasks.config import PipelineConfig
from tasks.proving.benchmarks import SPLIT, snapshot_benchmarks
from tasks.proving.config import ProvingSettings
from tasks.proving.evaluate import prove_theorems, proving_metrics, select_theorems, spec_of, theorem_rows
from tests.doubles.sample_store import sample_store

MINI_BENCH = Path(__file__).resolve().parents[2] / "examples" / "benchmarks" / "mini-bench.jsonl"
MINIF2F = {"mathd_algebra_10", "amc12_2000_p5", "imo_1964_p1_2", "induction_12dvd4expnp1p20", "mathd_numbertheory_3"}


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    """(store, the snapshot that keeps mini-bench out of training, mini-bench's fingerprint)."""
    store = sample_store(tmp_path_factory.mktemp("bench") / "home")
    benchmarks, _ = load_benchmarks([BenchmarkConfig(name="mini-bench", path=str(MINI_BENCH))])
    fp = save_benchmark(store, "mini-bench", benchmarks["mini-bench"])
    snapshot = build_snapshot(store, store.repo_ids(), SnapshotSettings(benchmarks=(fp,)))
    return store, snapshot.snapshot_id, fp


def _replay(**kw) -> ProvingSettings:
    return ProvingSettings(splits=["test"], max_theorems=None, benchmarks=["mini-bench"], **kw)


def test_replay_tries_a_benchmark_statement_only_through_the_store_theorem_that_states_it(bench):
    store, snapshot_id, fp = bench
    selection = select_theorems(store, store.repo_ids(), "random", _replay(), snapshot_id)
    chosen = [t for t in selection.theorems if t.split == SPLIT]
    (planted,) = chosen  # the renamed copy of the sample's ListLemmas.rev_append
    assert planted.repo_id == "benchmark:mini-bench" and planted.full_name == "planted_rev_concat"
    assert planted.benchmark == fp and planted.via.endswith(":ListLemmas.rev_append")
    assert spec_of(planted).full_name == "ListLemmas.rev_append"  # what replay starts: the traced theorem
    untried = [u for u in selection.untried if u.split == SPLIT]
    assert {u.full_name for u in untried} == MINIF2F
    assert all(u.benchmark == fp and "replay answers from traced proofs only" in u.reason for u in untried)


def test_every_row_computed_on_a_benchmark_carries_its_fingerprint_and_says_what_checked_it(bench):
    store, snapshot_id, fp = bench
    settings = _replay(num_tactics=8, max_expansions=4)
    selection = select_theorems(store, store.repo_ids(), "random", settings, snapshot_id)
    on_bench = [t for t in selection.theorems if t.split == SPLIT]
    untried = [u for u in selection.untried if u.split == SPLIT]
    # the closing-tactics baseline as the generator: it needs no checkpoint (tasks/generate/baseline.py)
    records = prove_theorems(store, settings, None, on_bench, baseline=True)
    assert [r.checker for r in records] == ["replay"] and records[0].started
    rows = {r.metric: r for r in proving_metrics(records, settings, untried)}
    assert rows["replay_pass@1"].benchmark == fp and rows["replay_pass@1"].count == 1
    assert rows["replay_pass@1"].ci_low is not None  # an interval, over one theorem: honest and wide
    assert rows["proving_untried"].value == 5.0 and rows["proving_untried"].benchmark == fp
    assert {r.repo_id for r in rows.values()} == {"benchmark:mini-bench"}
    per_theorem = theorem_rows(records, untried, settings)
    assert {r["benchmark"] for r in per_theorem} == {fp}
    record_results(store, per_theorem, "run-b", 1, "ckpt", "random")
    stored = read_results(store, "run-b")
    assert {(r["full_name"], r["status"]) for r in stored if r["status"] == "untried"} == {
        (n, "untried") for n in MINIF2F
    }
    (tried,) = [r for r in stored if r["status"] != "untried"]
    assert tried["checker"] == "replay" and tried["via"].endswith(":ListLemmas.rev_append") and tried["benchmark"] == fp


def test_kimina_with_a_header_checks_the_benchmarks_own_statements(bench):
    store, snapshot_id, fp = bench
    settings = ProvingSettings(
        backend={"kind": "kimina", "kimina": {"header": "import Mathlib"}},
        mode="whole_proof",
        splits=["test"],
        max_theorems=None,
        benchmarks=["mini-bench"],
    )
    selection = select_theorems(store, store.repo_ids(), "random", settings, snapshot_id)
    chosen = {t.full_name: t for t in selection.theorems if t.split == SPLIT}
    assert set(chosen) == MINIF2F | {"planted_rev_concat"} and not [u for u in selection.untried if u.split == SPLIT]
    spec = spec_of(chosen["amc12_2000_p5"])
    assert spec.repo_id == "benchmark:mini-bench" and spec.statement.startswith("theorem amc12_2000_p5 (x p : ℝ)")
    assert chosen["planted_rev_concat"].via is None  # its own text, not the store's theorem


def test_a_benchmark_the_snapshot_does_not_hold_or_the_config_does_not_declare_is_refused(bench, tmp_path):
    store, snapshot_id, _ = bench
    with pytest.raises(InputError, match=r"names minif2f, which snapshot .* does not keep out of training"):
        snapshot_benchmarks(store, snapshot_id, ["minif2f"])
    with pytest.raises(InputError, match=r"names mini-bench, which snapshot None does not keep .* \(it holds: none\)"):
        snapshot_benchmarks(store, None, ["mini-bench"])  # a checkpoint with no snapshot (an endpoint generator)
    config = PipelineConfig(
        sources=[{"sample": "NatBasics"}],
        trainers={"retriever": None, "progress": None},
        evaluation={"proving": {"backend": {"kind": "replay"}, "benchmarks": ["minif2f"]}},
    )
    with pytest.raises(InputError, match=r"evaluation.proving.benchmarks: names minif2f, which the `benchmarks:`"):
        config.validate_for_run()


def test_dojoflow_prove_takes_no_benchmarks_and_a_pipeline_configs_are_left_to_the_curriculum(tmp_path):
    from tasks.config import prove_config_from_yaml
    from tasks.proving.config import ProveConfig

    with pytest.raises(ValueError, match=r"proving.benchmarks=\['mini-bench'\] has no meaning here"):
        ProveConfig(proving={"backend": {"kind": "replay"}, "benchmarks": ["mini-bench"]})
    pipeline = tmp_path / "pipeline.yaml"
    pipeline.write_text(
        f"sources: [{{sample: NatBasics}}]\nbenchmarks: [{{name: mini-bench, path: {MINI_BENCH}}}]\n"
        "evaluation: {proving: {backend: {kind: replay}, benchmarks: [mini-bench]}}\n"
    )
    assert prove_config_from_yaml(pipeline).proving.benchmarks == []
