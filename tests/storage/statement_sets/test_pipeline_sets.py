"""The pipeline's `statements:` section and the sample's statement sets."""

from pathlib import Path

import yaml

from storage.sample import SAMPLE_ROOT
from storage.snapshot import SnapshotSettings
from storage.statement_sets import claimed_proofs, set_meta, statements, training_statements
from storage.statement_sets.reader import StatementSetConfig
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
