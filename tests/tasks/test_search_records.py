"""The typed search records (tasks/proving/records.py) read what the dict records of version 4
left on disk: a cached batch result written before the models reads back as its dicts, and each
validates into its model with every field kept, so a rerun answers from the old cache."""

from __future__ import annotations

import pytest
from prefect.serializers import JSONSerializer
from pydantic import ValidationError

from tasks.ingest import Ingested
from tasks.proving.config import ProvingSettings
from tasks.proving.evaluate import RECORD_VERSION, proof_rows, proving_metrics, spec_of
from tasks.proving.records import SampleRecord, SearchRecord, TheoremToTry, Untried

# A record as tasks/proving/evaluate.py wrote it at RECORD_VERSION 4 (`_theorem_record` of main at
# 9428aca: the TheoremSpec fields, theorem_id/split/goals, the outcome, then adapter/tokens/gpu_seconds).
V4_RECORD = {
    "repo_id": "r1",
    "url": "https://example.invalid/r1",
    "commit": "0" * 40,
    "file_path": "NatBasics/Add.lean",
    "full_name": "NatBasics.add_zero'",
    "statement": "theorem add_zero' (n : Nat) : n + 0 = n",
    "start": [3, 1],
    "theorem_id": "t-add-zero",
    "split": "test",
    "goals": "n : Nat\n⊢ n + 0 = n",
    "checker": "repl+elaborator_checked",
    "generator": "tiny",
    "started": True,
    "n": 2,
    "c": 1,
    "errors": 0,
    "unverified": 0,
    "error": None,
    "expansions": 3.5,
    "seconds": 0.25,
    "stopped": ["proved", "budget"],
    "proof": ["simp"],
    "axioms": ["propext"],
    "proof_expansions": 2,
    "proof_seconds": 0.2,
    "proof_states": ["n : Nat\n⊢ n + 0 = n"],
    "searched_by": "host:1",
    "adapter": None,
    "tokens": 12.0,
    "gpu_seconds": None,
}
# a benchmark statement tried through a store theorem (tasks/proving/benchmarks.py), version 4
V4_BENCHMARK = {
    "repo_id": "benchmark:mini",
    "file_path": "",
    "full_name": "amc_1",
    "theorem_id": "b-1",
    "split": "benchmark",
    "benchmark": "fp123",
    "via": "r1:NatBasics.add_zero'",
    "goals": "",
    "spec": {k: V4_RECORD[k] for k in ("repo_id", "url", "commit", "file_path", "full_name", "statement", "start")},
}
# an expert round's carried proof (tasks/expert/pool.py `search_batch`), version 4: no search fields
V4_CARRIED = {
    **{k: V4_RECORD[k] for k in ("repo_id", "url", "commit", "file_path", "full_name", "statement", "start")},
    **{"theorem_id": "t-new", "split": "train", "goals": "", "sorry": False, "toolchain": "v4.9.0"},
    **{"checker": "repl", "proof": ["omega"], "proof_states": None, "axioms": [], "proof_expansions": 0},
    **{"n": 0, "c": 0, "carried_from": "t-old"},
}


def test_a_version_4_cached_batch_reads_back_into_records_with_every_field_kept():
    serializer = JSONSerializer()
    on_disk = serializer.dumps([V4_RECORD])  # how Prefect stored the task's list of dicts
    (old,) = serializer.loads(on_disk)
    record = SearchRecord.of(old)
    dumped = record.model_dump(mode="json")
    assert {k: dumped[k] for k in V4_RECORD} == V4_RECORD  # nothing lost or changed
    assert record.start == (3, 1) and record.proof == ("simp",) and RECORD_VERSION == 4
    # the figures from the old dict and from its record are the same
    settings = ProvingSettings(backend={"kind": "repl"})
    assert proving_metrics([old], settings) == proving_metrics([record], settings)
    (row,) = proof_rows([old], "run", "ck", "evaluation")
    assert row["tactics"] == ["simp"] and row["proof"] == "simp" and row["axioms"] == ["propext"]


def test_records_round_trip_through_prefects_json_serializer_as_their_models():
    serializer = JSONSerializer()
    records = [SearchRecord.of(V4_RECORD), SearchRecord.of(V4_CARRIED), TheoremToTry.of(V4_BENCHMARK)]
    back = serializer.loads(serializer.dumps(records))
    assert back == records and [type(r) for r in back] == [SearchRecord, SearchRecord, TheoremToTry]
    assert b"__class__" in serializer.dumps(records) and b"pickle" not in serializer.dumps(records)


def test_old_benchmark_expert_and_untried_records_validate_and_keep_their_spec():
    bench = TheoremToTry.of(V4_BENCHMARK)
    assert spec_of(V4_BENCHMARK) == spec_of(bench) and spec_of(bench).full_name == "NatBasics.add_zero'"
    assert spec_of(bench).start == (3, 1)
    carried = SearchRecord.of(V4_CARRIED)
    assert carried.carried_from == "t-old" and carried.started and carried.expansions == 0.0
    untried = Untried.of({"repo_id": "r1", "file_path": "F.lean", "full_name": "T.x", "split": "test",
                          "reason": "no statement", "theorem_id": "t-x"})  # fmt: skip
    assert untried.reason == "no statement"
    sampled = SampleRecord.of({**V4_BENCHMARK, "kind": "statement", "key": "s1", "checker": "kimina",
                               "verified": ["by simp"], "axioms": {"by simp": ["propext"]}, "sampled": 4})  # fmt: skip
    assert sampled.axioms == {"by simp": ("propext",)}
    ingested = {"repo_ids": ["r1"], "statuses": {"r1": "added"}, "counts": {"r1": {"theorems": 3}}}
    assert Ingested.of(ingested).model_dump() == ingested  # the ingest task's cached result, as written before


def test_a_record_with_an_unknown_field_or_a_missing_one_is_refused():
    with pytest.raises(ValidationError, match="not_a_field"):
        SearchRecord.of({**V4_RECORD, "not_a_field": 1})
    with pytest.raises(ValidationError, match="checker"):
        SearchRecord.of({k: v for k, v in V4_RECORD.items() if k != "checker"})
    with pytest.raises(ValidationError):
        SearchRecord.of(V4_RECORD).__setattr__("c", 2)  # frozen
