"""Splits are fixed at ingestion: adding repositories in any order never moves a theorem."""

import itertools
import json

from storage.leandojo import import_export
from storage.splits import SplitSettings, assign_novel_premises, assign_random
from storage.store import Store
from storage.synthetic import write_synthetic_export


def _unassigned_export(tmp_path, name, seed):
    e = write_synthetic_export(tmp_path / name, name, 60, 3, seed=seed)
    meta = json.loads((e / "metadata.json").read_text())
    meta["dojoflow_splits"] = "unassigned"  # as tracing writes: the store assigns splits
    (e / "metadata.json").write_text(json.dumps(meta))
    return e


def _splits(store):
    rows = store.read_table("theorems").to_pylist()
    return {(r["repo_id"], r["full_name"]): (r["split_random"], r["split_novel_premises"]) for r in rows}


def test_adding_repositories_in_any_order_never_moves_a_theorem(tmp_path):
    exports = [_unassigned_export(tmp_path, n, s) for n, s in (("a", 1), ("b", 2), ("c", 3))]
    seen = None
    for k, order in enumerate(itertools.permutations(exports)):
        store = Store.open(tmp_path / f"home{k}")
        after_first = None
        for i, e in enumerate(order):
            import_export(store, e)
            if i == 0:
                after_first = _splits(store)
        final = _splits(store)
        # what the first repository got is unchanged after the others arrived
        assert {key: final[key] for key in after_first} == after_first
        if seen is None:
            seen = final
        assert final == seen  # and the same whatever the order
    kinds = {v for pair in seen.values() for v in pair}
    assert kinds == {"train", "val", "test"}


def test_splits_carried_by_an_export_are_kept(store, tmp_path):
    e = write_synthetic_export(tmp_path / "e", "kept", 30, 2, seed=7)
    import_export(store, e)
    expected = {}
    for kind in ("random", "novel_premises"):
        for split in ("train", "val", "test"):
            for r in json.loads((e / kind / f"{split}.json").read_text()):
                expected.setdefault(r["full_name"], {})[kind] = split
    for r in store.read_table("theorems").to_pylist():
        assert expected[r["full_name"]] == {"random": r["split_random"], "novel_premises": r["split_novel_premises"]}


def test_random_split_depends_only_on_identity_and_follows_fractions():
    keys = [("u", f"F{i % 7}.lean", f"thm{i}") for i in range(4000)]
    s = SplitSettings(val_fraction=0.1, test_fraction=0.2)
    a = assign_random(keys, s)
    b = assign_random(list(reversed(keys)), s)
    assert a == list(reversed(b))
    assert abs(a.count("val") / 4000 - 0.1) < 0.02
    assert abs(a.count("test") / 4000 - 0.2) < 0.02


def test_novel_premises_puts_theorems_using_rare_premises_in_val_and_test():
    keys = [("u", "F.lean", f"t{i}") for i in range(10)]
    used = [{"common"} for _ in range(8)] + [{"common", "rare1"}, {"rare2"}]
    out = assign_novel_premises(keys, used, SplitSettings(val_fraction=0.1, test_fraction=0.1))
    assert sorted(out[8:]) == ["test", "val"]
    assert out[:8] == ["train"] * 8


def test_fractions_that_leave_nothing_to_train_are_refused():
    import pytest
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="must be below 1"):
        SplitSettings(val_fraction=0.5, test_fraction=0.5)
