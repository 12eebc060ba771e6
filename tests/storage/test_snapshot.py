"""Snapshots: filtering, de-duplication, newest commit wins, content ids, reuse."""

import json
import time

from storage.curriculum import curriculum_order, repo_difficulties
from storage.leandojo import import_export
from storage.snapshot import SnapshotSettings, build_snapshot
from storage.synthetic import synthetic_records, write_synthetic_export


def test_snapshot_drops_sorry_and_no_goals_and_lists_every_split(store, export_with_dep):
    import_export(store, export_with_dep)
    snap = build_snapshot(store, store.repo_ids())
    train = snap.tactics("random", "train")
    assert train.num_rows > 0
    assert "sorry" not in train["tactic"].to_pylist()
    assert "no goals" not in train["state_before"].to_pylist()
    total_theorems = sum(snap.counts["random"][s]["theorems"] for s in ("train", "val", "test"))
    assert total_theorems == 50
    for kind in ("random", "novel_premises"):
        ids = [set(snap.theorems(kind, s)["theorem_id"].to_pylist()) for s in ("train", "val", "test")]
        assert not (ids[0] & ids[1]) and not (ids[0] & ids[2]) and not (ids[1] & ids[2])
    assert snap.premises().num_rows == 60
    assert snap.counts["random"]["train"]["tactics"] == train.num_rows


def test_snapshot_id_is_content_addressed_and_a_built_snapshot_returns_at_once(store, tmp_path):
    for i in range(3):
        import_export(store, write_synthetic_export(tmp_path / f"r{i}", f"r{i}", 30, 3, seed=i))
    ids = store.repo_ids()
    a = build_snapshot(store, ids[:2])
    assert build_snapshot(store, list(reversed(ids[:2]))).snapshot_id == a.snapshot_id
    assert build_snapshot(store, ids[:2], SnapshotSettings(drop_sorry=False)).snapshot_id != a.snapshot_id
    manifest = a.manifest_path
    mtime = (store.root / "snapshots" / a.snapshot_id / "manifest.json").stat().st_mtime_ns
    t = time.perf_counter()
    again = build_snapshot(store, ids[:2])
    assert time.perf_counter() - t < 0.5
    assert again.manifest_path == manifest
    assert (store.root / "snapshots" / a.snapshot_id / "manifest.json").stat().st_mtime_ns == mtime


def test_a_later_step_reuses_earlier_parts_without_rewriting_them(store, tmp_path):
    for i in range(3):
        import_export(store, write_synthetic_export(tmp_path / f"r{i}", f"r{i}", 30, 3, seed=i))
    ids = store.repo_ids()
    build_snapshot(store, ids[:1])
    parts = {p: p.stat().st_mtime_ns for p in (store.root / "parts").rglob("*.parquet")}
    build_snapshot(store, ids)
    for p, m in parts.items():
        assert p.stat().st_mtime_ns == m
    assert len(list((store.root / "parts").iterdir())) == 3


def test_theorems_held_by_several_repositories_are_kept_once(store, tmp_path):
    shared, corpus, _, _ = synthetic_records("shared", 5, 2, seed=1)
    a = write_synthetic_export(tmp_path / "a", "a", 10, 2, seed=1, extra_repos=[(shared, corpus)])
    fork = [dict(t, url="https://dojoflow.invalid/fork/shared") for t in shared]
    b = write_synthetic_export(tmp_path / "b", "b", 10, 2, seed=2, extra_repos=[(fork, corpus)])
    import_export(store, a)
    import_export(store, b)
    snap = build_snapshot(store, store.repo_ids())
    names = [n for s in ("train", "val", "test") for n in snap.theorems("random", s)["full_name"].to_pylist()]
    assert len(names) == len(set(names)) == 25


def test_when_a_repository_appears_at_two_commits_the_newer_one_wins(store, tmp_path):
    old, corpus, url, _ = synthetic_records("evolve", 10, 2, seed=1)
    e1 = write_synthetic_export(tmp_path / "old", "evolve", 10, 2, seed=1)
    import_export(store, e1)
    time.sleep(1.1)  # ingestion times are kept to the second
    e2 = write_synthetic_export(tmp_path / "new", "evolve", 12, 2, seed=2)
    meta = json.loads((e2 / "metadata.json").read_text())
    assert meta["from_repo"]["url"] == url
    import_export(store, e2)
    repos = {r["commit"]: r["repo_id"] for r in store.repositories()}
    assert len(repos) == 2
    snap = build_snapshot(store, store.repo_ids())
    newest = store.find_repositories(url, meta["from_repo"]["commit"])[0]["repo_id"]
    assert json.loads(open(snap.manifest_path).read())["kept_repo_ids"] == [newest]
    total = sum(snap.counts["random"][s]["theorems"] for s in ("train", "val", "test"))
    assert total == 12


def test_curriculum_orders_repositories_by_share_of_easy_theorems():
    rows = []
    # repo "easy": all 1-step proofs; "hard": long proofs; "mixed": some of each, plus a sorry
    rows += [{"repo_id": "easy", "name": "easy", "num_tactics": 1, "has_sorry": False}] * 10
    rows += [{"repo_id": "hard", "name": "hard", "num_tactics": 8, "has_sorry": False}] * 10
    rows += [{"repo_id": "mixed", "name": "mixed", "num_tactics": n, "has_sorry": False} for n in (1, 1, 4, 4, 8)]
    rows += [{"repo_id": "mixed", "name": "mixed", "num_tactics": 2, "has_sorry": True}]
    order = repo_difficulties(rows)
    assert [d.repo_id for d in order] == ["easy", "mixed", "hard"]
    mixed = order[1]
    # cuts: p33 = e^1 and p67 = e^8 over the 25 finite values, so e^4 and e^8 are medium
    assert (mixed.easy, mixed.medium, mixed.hard, mixed.sorry) == (2, 3, 0, 1)


def test_curriculum_order_reads_the_store(store, tmp_path):
    import_export(store, write_synthetic_export(tmp_path / "long", "long", 20, 6, seed=1))
    import_export(store, write_synthetic_export(tmp_path / "short", "short", 20, 1, seed=2))
    assert [d.name for d in curriculum_order(store)] == ["short", "long"]
