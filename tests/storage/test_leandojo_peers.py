"""What an export says about itself, and its order, for the peers' loaders (issue 15,
"Exports against the peers' loaders")."""

import json
import shutil

from storage.leandojo import import_export, write_export
from storage.store import Store
from storage.synthetic import write_synthetic_export

from .conftest import load_split, std_dependency


def test_an_export_says_which_splits_dojoflow_computed_and_keeps_them_on_round_trip(store, tmp_path):
    exp = write_synthetic_export(tmp_path / "e", "alpha", 30, 2, seed=1)
    shutil.rmtree(exp / "novel_premises")  # the source carries only the random split
    import_export(store, exp)
    out = write_export(store, tmp_path / "out", store.repo_ids())
    meta = json.loads((out / "metadata.json").read_text())
    computed = meta["dojoflow_computed_splits"]
    assert set(computed) == {"novel_premises"}
    assert computed["novel_premises"]["val_fraction"] == 0.1
    assert computed["novel_premises"]["test_fraction"] == 0.1
    assert (
        computed["novel_premises"]["repositories"]
        == [{"url": r["url"], "commit": r["commit"]} for r in meta["repositories"]]
        == computed["novel_premises"]["repositories"]
    )
    again = Store.open(tmp_path / "again")  # Dojoflow's export read back and exported again
    import_export(again, out)
    meta2 = json.loads((write_export(again, tmp_path / "out2", again.repo_ids()) / "metadata.json").read_text())
    assert meta2["dojoflow_computed_splits"] == computed


def test_an_export_of_a_source_with_both_splits_says_nothing_was_computed(store, export_with_dep, tmp_path):
    import_export(store, export_with_dep)
    meta = json.loads((write_export(store, tmp_path / "out", store.repo_ids()) / "metadata.json").read_text())
    assert "dojoflow_computed_splits" not in meta


def test_creation_time_is_the_sources_on_every_round_trip(store, export_with_dep, tmp_path):
    """An export holding a dependency is two repositories: its creation_time was replaced
    by the ingestion time."""
    source = json.loads((export_with_dep / "metadata.json").read_text())["creation_time"]
    import_export(store, export_with_dep)
    out = write_export(store, tmp_path / "out", store.repo_ids())
    assert json.loads((out / "metadata.json").read_text())["creation_time"] == source
    again = Store.open(tmp_path / "again")
    import_export(again, out)
    out2 = write_export(again, tmp_path / "out2", again.repo_ids())
    assert json.loads((out2 / "metadata.json").read_text())["creation_time"] == source


def test_a_multi_repository_export_has_the_documented_order(store, tmp_path):
    """docs/leandojo-export.md, "Order": repositories in the order asked for; within one,
    the order its source listed its theorems (random/train, val, test); both split kinds'
    files in that one order."""
    a = write_synthetic_export(tmp_path / "a", "alpha", 20, 2, seed=1, extra_repos=[std_dependency()])
    b = write_synthetic_export(tmp_path / "b", "beta", 20, 2, seed=2)
    import_export(store, a)
    import_export(store, b)
    by_name = {r["name"]: r["repo_id"] for r in store.repositories()}
    order = [by_name["beta"], by_name["alpha"], by_name["std"]]
    out = write_export(store, tmp_path / "out", order)

    def source_order(exp):
        return [
            (r["url"], r["full_name"])
            for s in ("train", "val", "test")
            for r in load_split(exp / "random" / f"{s}.json")
        ]

    by_repo = {}
    for url, name in source_order(b) + source_order(a):
        by_repo.setdefault(url.rsplit("/", 1)[-1], []).append((url, name))
    expected = by_repo["beta"] + by_repo["alpha"] + by_repo["std"]
    for kind in ("random", "novel_premises"):
        for split in ("train", "val", "test"):
            got = [(r["url"], r["full_name"]) for r in load_split(out / kind / f"{split}.json")]
            assert got == [k for k in expected if k in set(got)], (kind, split)


def test_export_import_export_keeps_every_metadata_field_of_every_repository(tmp_path):
    """Three repositories exported, imported into a new home and exported again: the second
    metadata.json lost leandojo_version and from_repo for two of the three (issue 26)."""
    from storage.sample import sample_export_dirs

    first = Store.open(tmp_path / "first")
    for d in sample_export_dirs():
        import_export(first, d)
    out = write_export(first, tmp_path / "out", first.repo_ids())
    meta = json.loads((out / "metadata.json").read_text())
    assert len(meta["repositories"]) == 3 and all(
        "leandojo_version" in r and "from_repo" in r for r in meta["repositories"]
    )
    again = Store.open(tmp_path / "again")
    import_export(again, out)
    out2 = write_export(again, tmp_path / "out2", again.repo_ids())
    meta2 = json.loads((out2 / "metadata.json").read_text())
    assert set(meta2) == set(meta)
    for field in meta:
        assert meta2[field] == meta[field], field
