"""A benchmark that overlaps much of the training data is named in one warning line (issue 26 C:
a benchmark equal to the training data excluded 84 of 89 theorems and the run trained on the
rest with no word on the terminal); a split it empties is refused (tests/storage/test_contamination.py).
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from storage.contamination import save_benchmark
from storage.snapshot import SnapshotSettings, build_snapshot
from tasks.benchmark_overlap import WARN_FRACTION, overlap_warning, removed_by_benchmarks
from tasks.benchmarks import BenchmarkConfig, load_benchmarks
from tests.doubles.sample_store import sample_store

SAMPLE_EXPORT = Path(__file__).resolve().parents[2] / "storage" / "sample" / "leandojo" / "NatBasics"


@pytest.fixture(scope="module")
def nat(tmp_path_factory):
    store = sample_store(tmp_path_factory.mktemp("overlap") / "home")
    nat = [r for r in store.repo_ids() if "NatBasics" in r]
    plain = build_snapshot(store, nat)
    train = set(plain.theorems("random", "train")["full_name"].to_pylist())
    both = train & set(plain.theorems("novel_premises", "train")["full_name"].to_pylist())
    benchmarks, _ = load_benchmarks([BenchmarkConfig(name="itself", path=str(SAMPLE_EXPORT))])
    in_train = sorted((t for t in benchmarks["itself"] if t["name"] in both), key=lambda t: t["name"])
    return store, nat, in_train, len(train)


def _snapshot(nat, share: float):
    store, repos, in_train, n_train = nat
    chosen = in_train[: round(share * n_train)]
    fp = save_benchmark(store, f"part-{share}", chosen)
    return build_snapshot(store, repos, SnapshotSettings(benchmarks=(fp,))), len(chosen), n_train


def test_a_benchmark_removing_most_of_a_split_is_named_in_one_line(nat):
    snapshot, removed, n_train = _snapshot(nat, 0.75)
    line = overlap_warning(snapshot)
    assert line is not None and "\n" not in line
    train = next(r for r in removed_by_benchmarks(snapshot) if r["split"] == "random/train")
    # the chosen statements, and any other theorem stating one of them
    assert train["theorems"] == n_train and train["removed"] >= removed > WARN_FRACTION * n_train
    assert f"{train['removed']} of {n_train} theorems of random/train" in line and "part-0.75" in line
    assert "more than 50%" in line and "training goes on with the rest" in line
    assert snapshot.counts["random"]["train"]["theorems"] == n_train - train["removed"]  # what trains


def test_a_benchmark_removing_a_few_theorems_says_nothing(nat):
    snapshot, removed, _ = _snapshot(nat, 0.1)
    assert removed > 0 and overlap_warning(snapshot) is None, [r for r in removed_by_benchmarks(snapshot)]
    assert overlap_warning(build_snapshot(nat[0], nat[1])) is None  # no benchmark at all


def test_the_warning_is_a_line_of_its_own_on_the_terminal():
    from rich.console import Console

    from flows.cli.terminal import RunDisplay

    piped = io.StringIO()
    display = RunDisplay(Console(file=piped, width=200))
    display.show("snapshot", 1, 2, repo="NatBasics")
    display.note("warning: benchmarks [b] remove 7 of 9 theorems")
    display.close()
    assert [line[7:] for line in piped.getvalue().splitlines()] == [
        "step 1/2 NatBasics · snapshot",
        "warning: benchmarks [b] remove 7 of 9 theorems",
    ]
