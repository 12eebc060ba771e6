"""Snapshots: filtering, de-duplication, newest commit wins, content ids, reuse."""

import json
import shutil
import time
from datetime import datetime

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from storage import snapshot
from storage.curriculum import curriculum_order, repo_difficulties
from storage.leandojo import import_export
from storage.snapshot import SnapshotSettings, _recency, build_snapshot, newest_commits
from storage.synthetic import synthetic_records, write_synthetic_export
from storage.tactic_text import is_sorry, sorry_mask

# Synthetic repositories repeat statement texts under other names; where a test counts what the
# de-duplication by theorem identity keeps, the cross-repository statement check (on by default,
# tests/storage/test_contamination.py) is off.
BY_IDENTITY = SnapshotSettings(contamination={"cross_repository": False})


def test_snapshot_drops_sorry_and_lists_every_split(store, export_with_dep):
    import_export(store, export_with_dep)
    assert "sorry" in store.read_table("tactics")["tactic"].to_pylist()
    snap = build_snapshot(store, store.repo_ids(), BY_IDENTITY)
    train = snap.tactics("random", "train")
    assert train.num_rows > 0
    assert "sorry" not in train["tactic"].to_pylist()
    total_theorems = sum(snap.counts["random"][s]["theorems"] for s in ("train", "val", "test"))
    assert total_theorems == 50
    for kind in ("random", "novel_premises"):
        ids = [set(snap.theorems(kind, s)["theorem_id"].to_pylist()) for s in ("train", "val", "test")]
        assert not (ids[0] & ids[1]) and not (ids[0] & ids[2]) and not (ids[1] & ids[2])
    assert snap.premises().num_rows == 60
    assert snap.counts["random"]["train"]["tactics"] == train.num_rows


def _with_no_goals_states(exp):
    """Give two tactics a `no goals` state before (one padded with whitespace), in every
    split file that holds their theorem; return (full_name, idx) of each."""
    first = json.loads((exp / "random" / "train.json").read_text())
    targets = {}
    candidates = [r for r in first if len(r["traced_tactics"]) >= 2 and r["traced_tactics"][-1]["tactic"] != "sorry"]
    for rec, state in zip(candidates[:2], ["no goals", "  no goals\n"]):
        targets[rec["full_name"]] = (len(rec["traced_tactics"]) - 1, state)
    for kind in ("random", "novel_premises"):
        for split in ("train", "val", "test"):
            path = exp / kind / f"{split}.json"
            recs = json.loads(path.read_text())
            for r in recs:
                if r["full_name"] in targets:
                    idx, state = targets[r["full_name"]]
                    r["traced_tactics"][idx]["state_before"] = state
            path.write_text(json.dumps(recs))
    return {(name, idx) for name, (idx, _) in targets.items()}


def test_snapshot_drops_tactics_whose_state_before_is_no_goals(store, tmp_path):
    exp = write_synthetic_export(tmp_path / "e", "closed", 30, 3, seed=4)
    dropped = _with_no_goals_states(exp)
    import_export(store, exp)
    stored = {
        (t["full_name"], t["idx"])
        for t in store.read_table("tactics").to_pylist()
        if t["state_before"].strip() == "no goals"
    }
    assert stored == dropped and len(dropped) == 2  # the data really has them

    def rows(snap):
        return {
            (t["full_name"], t["idx"]) for s in ("train", "val", "test") for t in snap.tactics("random", s).to_pylist()
        }

    kept = rows(build_snapshot(store, store.repo_ids()))
    assert not (kept & dropped)
    assert {(n, i - 1) for n, i in dropped} <= kept  # the rest of those proofs stays
    assert dropped <= rows(build_snapshot(store, store.repo_ids(), SnapshotSettings(drop_no_goals=False)))


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
    snap = build_snapshot(store, store.repo_ids(), BY_IDENTITY)
    names = [n for s in ("train", "val", "test") for n in snap.theorems("random", s)["full_name"].to_pylist()]
    assert len(names) == len(set(names)) == 25


def _overlapping(store, tmp_path) -> list[str]:
    """Three exports whose forks of `shared` (under three urls) hold 4, 8 and 12 of its
    theorems: 12 copies too many across the store."""
    shared, corpus, _, _ = synthetic_records("shared", 12, 2, seed=1)
    for i in range(3):
        fork = [dict(t, url=f"https://dojoflow.invalid/fork{i}/shared") for t in shared[: 4 + 4 * i]]
        import_export(
            store, write_synthetic_export(tmp_path / f"r{i}", f"r{i}", 10, 2, seed=i, extra_repos=[(fork, corpus)])
        )
    return store.repo_ids()


def _dedupe_by_loop(store, repo_ids) -> set:
    """De-duplication as the rule reads, one theorem at a time: the reference."""
    repos = {r: store.repository(r) for r in repo_ids}
    seen, excluded = set(), set()
    for r in sorted(newest_commits(repos), key=lambda r: _recency(repos[r]), reverse=True):
        for t in store.read_table("theorems", [r], columns=["theorem_id", "file_path", "full_name"]).to_pylist():
            key = (t["file_path"], t["full_name"])
            if key in seen:
                excluded.add((r, t["theorem_id"]))
            seen.add(key)
    return excluded


def _excluded_and_counts(store, snap):
    manifest = snap.manifest()
    excluded = pq.read_table(store.root / manifest["excluded"]).to_pylist() if manifest["excluded"] else []
    return {(e["repo_id"], e["theorem_id"]) for e in excluded}, manifest["counts"]


def _rebuild(store, snap):
    shutil.rmtree(store.root / "snapshots" / snap.snapshot_id)
    return build_snapshot(store, list(snap.repo_ids))


def test_deduplication_keeps_the_newest_copy_and_counts_what_readers_get(store, tmp_path):
    ids = _overlapping(store, tmp_path)
    snap = build_snapshot(store, ids, BY_IDENTITY)
    excluded, counts = _excluded_and_counts(store, snap)
    assert excluded == _dedupe_by_loop(store, ids) and len(excluded) == 12
    for kind in ("random", "novel_premises"):
        for split in ("train", "val", "test"):
            assert counts[kind][split] == {
                "theorems": snap.theorems(kind, split).num_rows,
                "tactics": snap.tactics(kind, split).num_rows,
            }


def test_deduplication_compares_names_where_identity_hashes_collide(store, tmp_path, monkeypatch):
    ids = _overlapping(store, tmp_path)
    expected = _excluded_and_counts(store, build_snapshot(store, ids))
    real = snapshot._index_keys
    # Four hash values for 66 theorems: nearly every row collides with unrelated ones.
    monkeypatch.setattr(snapshot, "_index_keys", lambda p: pc.bit_wise_and(real(p), pa.scalar(3, pa.uint64())))
    assert _excluded_and_counts(store, _rebuild(store, build_snapshot(store, ids))) == expected


def test_parts_written_before_identity_hashes_and_file_lists_still_deduplicate(store, tmp_path):
    ids = _overlapping(store, tmp_path)
    snap = build_snapshot(store, ids)
    expected = _excluded_and_counts(store, snap)
    for part in (store.root / "parts").glob("*/*"):  # as an older Dojoflow wrote them
        pq.write_table(pq.read_table(part / "index.parquet").drop_columns(["key"]), part / "index.parquet")
        summary = json.loads((part / "_SUCCESS").read_text())
        (part / "_SUCCESS").write_text(json.dumps({k: summary[k] for k in ("random", "novel_premises")}))
    assert _excluded_and_counts(store, _rebuild(store, snap)) == expected


def test_only_repositories_that_share_a_file_path_are_compared(store, tmp_path, monkeypatch):
    ids = _overlapping(store, tmp_path)
    read = []
    real = snapshot._index_keys
    monkeypatch.setattr(snapshot, "_index_keys", lambda p: read.append(p) or real(p))
    build_snapshot(store, ids)
    forks = {r["repo_id"] for r in store.repositories() if "/fork" in r["url"]}
    assert len(forks) == 3 and {p.parent.parent.name.rsplit("-", 1)[0] for p in read} == forks
    read.clear()
    build_snapshot(store, [r for r in ids if r not in forks])  # r0, r1, r2: no file path in common
    assert read == []


def test_sorry_filter_agrees_with_is_sorry():
    texts = [
        "sorry",
        "  sorry\n",
        "admit",
        "exact h",
        "simp; sorry",
        "by\n  sorry",
        "exact sorryAx _",
        "sorry_lemma h",
        "  admit  ",
        "rw [h]\tsorry",
        "-- sorry here\nexact h",
        "notsorry",
        "",
        "\u00a0sorry",
    ]
    assert sorry_mask(pa.array(texts)).to_pylist() == [is_sorry(t) for t in texts]


def _evolve(tmp_path, name: str, theorems: int, seed: int, commit_time: str | None):
    exp = write_synthetic_export(tmp_path / name, "evolve", theorems, 2, seed=seed)
    meta = json.loads((exp / "metadata.json").read_text())
    if commit_time:
        meta["commit_time"] = commit_time
    (exp / "metadata.json").write_text(json.dumps(meta))
    return exp, meta["from_repo"]


def test_the_newer_commit_wins_even_when_it_was_imported_first(store, tmp_path):
    new, new_repo = _evolve(tmp_path, "new", 12, 2, "2026-03-01T12:00:00Z")
    old, _ = _evolve(tmp_path, "old", 10, 1, "2025-01-01T12:00:00+00:00")
    import_export(store, new)
    time.sleep(1.1)  # ingestion times are kept to the second: the old commit is ingested later
    import_export(store, old)
    repos = store.repositories()
    assert len(repos) == 2 and len({r["url"] for r in repos}) == 1
    newest = store.find_repositories(new_repo["url"], new_repo["commit"])[0]
    assert max(repos, key=lambda r: r["ingested_at"])["repo_id"] != newest["repo_id"]
    snap = build_snapshot(store, store.repo_ids())
    assert json.loads(open(snap.manifest_path).read())["kept_repo_ids"] == [newest["repo_id"]]
    assert sum(snap.counts["random"][s]["theorems"] for s in ("train", "val", "test")) == 12


def test_without_commit_times_the_last_imported_commit_wins(store, tmp_path):
    # LeanDojo exports carry no commit time: ingestion order decides (documented in storage/snapshot.py)
    e1, r1 = _evolve(tmp_path, "one", 10, 1, None)
    e2, r2 = _evolve(tmp_path, "two", 12, 2, None)
    import_export(store, e2)
    time.sleep(1.1)
    import_export(store, e1)
    snap = build_snapshot(store, store.repo_ids())
    last = store.find_repositories(r1["url"], r1["commit"])[0]["repo_id"]
    assert json.loads(open(snap.manifest_path).read())["kept_repo_ids"] == [last]


def test_newest_commits_never_compares_a_commit_time_with_an_ingestion_time():
    t = lambda s: datetime.fromisoformat(s)  # noqa: E731

    def repo(rid, url, commit_time, ingested):
        return rid, {
            "repo_id": rid,
            "url": url,
            "commit_time": commit_time and t(commit_time),
            "ingested_at": t(ingested),
        }

    u, v = "https://x/a", "https://x/b.git"
    cases = [
        # (repositories, kept)
        (
            [
                repo("a1", u, "2026-01-01T00:00+00:00", "2026-05-01T00:00+00:00"),
                repo("a2", u, "2025-01-01T00:00+00:00", "2026-06-01T00:00+00:00"),
            ],
            ["a1"],
        ),  # commit time decides
        (
            [
                repo("a1", u, "2026-01-01T00:00+00:00", "2026-05-01T00:00+00:00"),
                repo("a2", u, None, "2026-04-01T00:00+00:00"),
            ],
            ["a1"],
        ),  # one lacks it: ingestion time for both
        (
            [
                repo("a1", u, "2027-01-01T00:00+00:00", "2026-05-01T00:00+00:00"),
                repo("a2", u, None, "2026-06-01T00:00+00:00"),
            ],
            ["a2"],
        ),  # ... even when the commit time is later
        (
            [
                repo("a1", u, None, "2026-05-01T00:00+00:00"),
                repo("b1", v, None, "2026-01-01T00:00+00:00"),
                repo("b2", v.removesuffix(".git") + "/", None, "2026-02-01T00:00+00:00"),
            ],
            ["a1", "b2"],
        ),  # url normalised
    ]
    for repos, kept in cases:
        assert newest_commits(dict(repos)) == kept, repos


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


def test_curriculum_handles_proofs_longer_than_709_tactics_with_the_same_cuts():
    """e^710 overflows a float; the cuts are computed in log space, interpolated as in difficulty space."""
    import math

    rows = [{"repo_id": "short", "name": "short", "num_tactics": n, "has_sorry": False} for n in (1, 2, 3)]
    rows += [{"repo_id": "long", "name": "long", "num_tactics": n, "has_sorry": False} for n in (2, 800, 5000)]
    order = repo_difficulties(rows)
    assert [d.repo_id for d in order] == ["short", "long"]
    # small values: the same easy/medium/hard counts as the exponential rule
    small = [{"repo_id": "r", "name": "r", "num_tactics": n, "has_sorry": False} for n in (1, 2, 2, 3, 5, 9, 10)]
    finite = sorted(math.exp(t["num_tactics"]) for t in small)

    def cut(q):  # linear interpolation between the two nearest ranks
        lo, hi = finite[math.floor((len(finite) - 1) * q)], finite[math.ceil((len(finite) - 1) * q)]
        return lo + (hi - lo) * ((len(finite) - 1) * q % 1)

    p33, p67 = cut(1 / 3), cut(2 / 3)
    expected = (sum(d <= p33 for d in finite), sum(p33 < d <= p67 for d in finite), sum(d > p67 for d in finite))
    (r,) = repo_difficulties(small)
    assert (r.easy, r.medium, r.hard) == expected


def test_curriculum_order_reads_the_store(store, tmp_path):
    import_export(store, write_synthetic_export(tmp_path / "long", "long", 20, 6, seed=1))
    import_export(store, write_synthetic_export(tmp_path / "short", "short", 20, 1, seed=2))
    assert [d.name for d in curriculum_order(store)] == ["short", "long"]
