"""Benchmarks kept out of training (issue 17 §2): the statement fingerprint survives
renaming and layout, 13-gram overlap finds near-copies, the snapshot excludes them with
the reason and writes a contamination report, the snapshot id carries the benchmarks and
thresholds, cross-repository copies are kept once; bad benchmark files are refused.

    PYTHONPATH=$PWD .venv/bin/python -m pytest tests/storage/test_contamination.py -q
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from storage.contamination import ContaminationSettings, contaminated, fingerprint, save_benchmark
from storage.errors import InputError
from storage.leandojo import import_export
from storage.snapshot import SnapshotSettings, build_snapshot
from storage.store import Store
from tasks.benchmarks import BenchmarkConfig, load_benchmarks
from tests.doubles.sample_store import sample_store

MINI_BENCH = Path(__file__).resolve().parents[2] / "examples" / "benchmarks" / "mini-bench.jsonl"


def test_the_fingerprint_survives_renaming_layout_and_comments_but_not_a_changed_statement():
    a = "theorem add_comm' (a b : Nat) : a + b = b + a"
    assert fingerprint(a) == fingerprint("lemma foo (x y : Nat) :\n    x + y = y + x  -- commuted")
    assert fingerprint(a) == fingerprint("theorem t /- c -/ (m n : Nat) : m + n = n + m")
    assert fingerprint(a) != fingerprint("theorem t (a b : Nat) : a + b = a + b")
    assert fingerprint("theorem t : ∀ n : Nat, n + 0 = n") == fingerprint("theorem u : ∀ k : Nat, k + 0 = k")


def test_near_copies_are_found_by_13_gram_overlap_and_the_threshold_is_a_setting():
    bench = [
        {
            "name": "b",
            "theorems": [{"name": "p", "statement": "theorem p (a b c : Nat) (h : a ≤ b) (k : b ≤ c) : a ≤ c + 0"}],
        }
    ]
    near = {
        "repo_id": "r",
        "theorem_id": "1",
        "full_name": "T.q",
        "statement": "theorem q (x y z : Nat) (h : x ≤ y) (k : y ≤ z) : x ≤ z + 1",
    }
    unrelated = {
        "repo_id": "r",
        "theorem_id": "2",
        "full_name": "T.u",
        "statement": "theorem u (l : List Nat) : l.reverse.reverse = l",
    }
    (hit,) = contaminated([near, unrelated], bench, ContaminationSettings())
    assert (
        hit["full_name"] == "T.q"
        and hit["reason"].startswith("13-gram overlap with benchmark b: p")
        and 0 < hit["overlap"] < 1
    )
    assert contaminated([near], bench, ContaminationSettings(max_overlap=0.95)) == []


@pytest.fixture
def store(tmp_path):
    return sample_store(tmp_path / "home")


def test_a_planted_benchmark_copy_leaves_training_with_its_reason_and_a_report(store):
    benchmarks, _ = load_benchmarks([BenchmarkConfig(name="mini-bench", path=str(MINI_BENCH))])
    fp = save_benchmark(store, "mini-bench", benchmarks["mini-bench"])
    plain = build_snapshot(store, store.repo_ids())
    checked = build_snapshot(store, store.repo_ids(), SnapshotSettings(benchmarks=(fp,)))
    assert checked.snapshot_id != plain.snapshot_id  # the benchmark is part of the snapshot's identity
    stricter = build_snapshot(store, store.repo_ids(), SnapshotSettings(benchmarks=(fp,), contamination={"ngram": 8}))
    assert stricter.snapshot_id != checked.snapshot_id  # and so are the thresholds
    train = lambda s: set(s.theorems("random", "train")["full_name"].to_pylist())  # noqa: E731
    assert train(plain) - train(checked) == {"ListLemmas.rev_append"}  # the renamed copy; no unrelated theorem
    report = json.loads((store.root / checked.manifest()["contamination"]).read_text())
    (excluded,) = report["excluded"]
    assert excluded["full_name"] == "ListLemmas.rev_append" and excluded["matched"] == "planted_rev_concat"
    assert excluded["reason"] == "same statement as benchmark mini-bench: planted_rev_concat"
    assert report["benchmarks"] == [{"name": "mini-bench", "fingerprint": fp, "statements": 6}]
    assert list(report["counts"].values()) == [{"mini-bench": 1}]
    assert checked.counts["random"]["train"]["theorems"] == plain.counts["random"]["train"]["theorems"] - 1


def test_one_statement_in_two_repositories_is_kept_once(tmp_path):
    from storage.synthetic import write_synthetic_export

    from .conftest import std_dependency

    store = Store.open(tmp_path / "home")
    import_export(store, write_synthetic_export(tmp_path / "a", "alpha", 12, 1, seed=1))
    import_export(store, write_synthetic_export(tmp_path / "b", "beta", 6, 1, seed=2))  # thm0..5: alpha's statements
    without = build_snapshot(store, store.repo_ids(), SnapshotSettings(contamination={"cross_repository": False}))
    once = build_snapshot(store, store.repo_ids(), SnapshotSettings(contamination={"cross_repository": True}))
    report = json.loads((store.root / once.manifest()["contamination"]).read_text())
    assert len(report["excluded"]) == 6 and all(
        e["reason"].startswith("same statement as ") for e in report["excluded"]
    )
    total = lambda s: sum(s.counts["random"][x]["theorems"] for x in ("train", "val", "test"))  # noqa: E731
    assert total(without) - total(once) == 6
    assert std_dependency  # the conftest helper stays importable for the other tests
    # a checked snapshot never takes the id of an unchecked one
    assert once.snapshot_id != without.snapshot_id
    # off by default: the copies leave every split, and an older repository's evaluation with them
    # (tests/flows/test_curriculum.py::test_first_run_trains_every_step_and_a_second_run_is_all_cached)
    assert SnapshotSettings().contamination.cross_repository is False


def _write(path: Path, lines: list[str]) -> str:
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def test_bad_benchmark_files_are_refused_naming_the_file_and_line_and_nothing_is_written(tmp_path, store):
    good = '{"name": "a", "statement": "theorem a (n : Nat) : n + 0 = n"}'
    broken = _write(tmp_path / "broken.jsonl", [good, '{"name": "b", "statement": '])
    with pytest.raises(InputError, match="line 2 is not valid JSON"):
        load_benchmarks([BenchmarkConfig(name="x", path=broken)])
    empty = _write(tmp_path / "empty.jsonl", [""])
    with pytest.raises(InputError, match="holds no theorems"):
        load_benchmarks([BenchmarkConfig(name="x", path=empty)])
    twice = _write(tmp_path / "twice.jsonl", [good, '{"name": "c", "statement": "theorem c (m : Nat) : m + 0 = m"}'])
    with pytest.raises(InputError, match=r"twice.jsonl.*c \(line 2\) states what a \(line 1\) does"):
        load_benchmarks([BenchmarkConfig(name="x", path=twice)])
    other = _write(tmp_path / "other.jsonl", [good])
    _, warnings = load_benchmarks(
        [
            BenchmarkConfig(name="x", path=other),
            BenchmarkConfig(name="y", path=str(MINI_BENCH)),
            BenchmarkConfig(name="z", path=other),
        ]
    )
    (warning,) = warnings
    assert "other.jsonl (line 1, a) repeats a statement of benchmark `x`" in warning
    assert not (store.root / "benchmarks").exists()  # checking writes nothing


SAMPLE_EXPORT = Path(__file__).resolve().parents[2] / "storage" / "sample" / "leandojo" / "NatBasics"


def _plant(kind: str, target: Path, outside: Path) -> None:
    """Replace `target` (an export's random/test.json) with one hostile file."""
    target.unlink()
    if kind == "fifo":
        os.mkfifo(target)  # no writer ever opens it: a plain read blocks for good
    elif kind == "dev-zero":
        target.symlink_to("/dev/zero")
    elif kind == "outside":
        outside.write_text(json.dumps([{"full_name": "x", "theorem_statement": "theorem x : True"}]))
        target.symlink_to(outside)
    else:
        record = {"url": "https://github.com/a/b", "theorem_statement": "theorem t : True"}
        texts = {
            "no-full-name": json.dumps([record]).encode(),
            "ints": b"[1, 2, 3]",
            "0xff": b'[{"full_name": "t\xff"}]',
        }
        target.write_bytes(texts[kind])


@pytest.mark.timeout(300)  # a FIFO once blocked the read for good: fail, do not hang the suite
@pytest.mark.parametrize(
    ("kind", "says"),
    [
        ("fifo", "is not a regular file (a FIFO)"),
        ("dev-zero", "outside the export"),
        ("outside", "outside the export"),
        ("no-full-name", "full_name"),
        ("ints", "record 0"),
        ("0xff", "is not UTF-8 text"),
    ],
)
def test_a_benchmark_export_folder_is_read_with_the_imports_checks(tmp_path, kind, says):
    export = tmp_path / "bench"
    shutil.copytree(SAMPLE_EXPORT, export)
    _plant(kind, export / "random" / "test.json", tmp_path / "other-export-test.json")
    with pytest.raises(InputError, match=re.escape(says)) as e:
        load_benchmarks([BenchmarkConfig(name="b", path=str(export))])
    assert "test.json" in str(e.value) and "\n" not in str(e.value)


def test_a_benchmark_that_is_the_training_data_is_refused_before_the_snapshot_is_written(store):
    """It excluded 84 of 89 theorems and the run trained on the rest, saying nothing (issue 26)."""
    benchmarks, _ = load_benchmarks([BenchmarkConfig(name="itself", path=str(SAMPLE_EXPORT))])
    fp = save_benchmark(store, "itself", benchmarks["itself"])
    nat = [r for r in store.repo_ids() if "NatBasics" in r]
    snapshots = store.root / "snapshots"
    before = sorted(snapshots.rglob("*")) if snapshots.exists() else []
    with pytest.raises(InputError, match=r"benchmarks itself: exclude every theorem of split .*is the training data"):
        build_snapshot(store, nat, SnapshotSettings(benchmarks=(fp,)))
    assert (sorted(snapshots.rglob("*")) if snapshots.exists() else []) == before
