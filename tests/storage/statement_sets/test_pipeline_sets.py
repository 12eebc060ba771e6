"""The pipeline's `statements:` section and the sample's statement sets."""

import json
from pathlib import Path

import yaml

from storage.sample import SAMPLE_ROOT
from storage.snapshot import SnapshotSettings
from storage.statement_sets import claimed_proofs, set_meta, statements, training_statements
from storage.statement_sets.reader import StatementSetConfig, import_set
from storage.store import Store
from tasks.config import PipelineConfig
from tasks.statement_sets import import_statement_sets

SETS = Path(SAMPLE_ROOT) / "statements"


def test_the_config_section_resolves_paths_beside_the_file(tmp_path):
    (tmp_path / "sets").mkdir()
    (tmp_path / "sets" / "a.jsonl").write_text("")
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump({"statements": [{"path": "sets/a.jsonl", "benchmark": True}, {"path": "AI-MO/x"}]}))
    config = PipelineConfig.from_yaml(path)
    assert config.statements[0].path == str(tmp_path / "sets" / "a.jsonl") and config.statements[0].benchmark
    assert config.statements[1].path == "AI-MO/x"  # a hub id stays one


def test_the_sample_sets_import_and_a_benchmark_set_joins_the_snapshot_benchmarks(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    store = Store.open(tmp_path / "home")
    configs = [
        StatementSetConfig(path=str(SETS / "nat-pset.jsonl")),
        StatementSetConfig(path=str(SETS / "mini-bench.jsonl"), benchmark=True),
    ]
    settings, rows = import_statement_sets(store, configs, SnapshotSettings())
    assert [(r["set"], r["status"], r["statements"]) for r in rows] == [
        ("nat-pset", "added", 12),
        ("mini-bench", "added", 4),
    ]
    assert settings.benchmarks == (set_meta(store, "mini-bench")["benchmark_fingerprint"],)
    assert (store.root / "benchmarks" / f"{settings.benchmarks[0]}.json").is_file()
    again, rows = import_statement_sets(store, configs, settings)
    assert again.benchmarks == settings.benchmarks and {r["status"] for r in rows} == {"unchanged"}
    assert set_meta(store, "nat-pset")["lean_version"] == "v4.20.0"
    assert len(claimed_proofs(store, ["nat-pset"])) == 11
    assert {r["set"] for r in training_statements(store)} == {"nat-pset"}
    assert {r["split"] for r in statements(store, ["mini-bench"])} == {"val", "test"}


def test_a_benchmark_set_imported_from_the_shell_keeps_out_of_every_later_run(tmp_path, monkeypatch):
    from tasks.benchmarks import register_benchmarks

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    store = Store.open(tmp_path / "home")
    assert register_benchmarks(store, [], SnapshotSettings()) == SnapshotSettings()  # nothing: the id it had
    import_set(store, StatementSetConfig(path=str(SETS / "mini-bench.jsonl"), benchmark=True))
    import_set(store, StatementSetConfig(path=str(SETS / "nat-pset.jsonl")))
    settings = register_benchmarks(store, [], SnapshotSettings())
    assert settings.benchmarks == (set_meta(store, "mini-bench")["benchmark_fingerprint"],)


def test_a_repository_theorem_restated_by_a_benchmark_set_leaves_the_snapshot(tmp_path, monkeypatch):
    """mini-bench's `mini_add_assoc` states NatBasics.add_assoc' (a train theorem of the sample) with
    other names: with the set imported as a benchmark, the repositories' snapshot excludes it, with
    the contamination report's reason."""
    from storage.snapshot import build_snapshot
    from tasks.benchmarks import register_benchmarks
    from tests.doubles.sample_store import sample_store

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    store = sample_store(tmp_path / "home")
    import_set(store, StatementSetConfig(path=str(SETS / "mini-bench.jsonl"), benchmark=True))
    settings = register_benchmarks(store, [], SnapshotSettings())
    plain = build_snapshot(store, store.repo_ids())
    checked = build_snapshot(store, store.repo_ids(), settings)
    train = lambda s: set(s.theorems("random", "train")["full_name"].to_pylist())  # noqa: E731
    report = json.loads((store.root / checked.manifest()["contamination"]).read_text())
    reasons = {e["full_name"]: e["reason"] for e in report["excluded"]}
    assert reasons["NatBasics.add_assoc'"] == "same statement as benchmark mini-bench: mini_add_assoc"
    # the gate's near-copy rule also takes `a + b + c = a + c + b` (4 of its 7 13-grams are mini_add_assoc's)
    assert reasons["NatBasics.add_right_comm'"].startswith("13-gram overlap with benchmark mini-bench")
    assert {e["full_name"]: e["overlap"] for e in report["excluded"]}["NatBasics.add_right_comm'"] == round(4 / 7, 4)
    assert train(plain) - train(checked) == set(reasons) & train(plain)


def test_the_example_config_names_the_sample_sets():
    config = PipelineConfig.from_yaml(Path(__file__).parents[3] / "examples" / "statement-sets.yaml")
    assert [Path(s.path).resolve() for s in config.statements] == [
        (SETS / "nat-pset.jsonl").resolve(),
        (SETS / "mini-bench.jsonl").resolve(),
    ]
    assert [s.benchmark for s in config.statements] == [False, True]
