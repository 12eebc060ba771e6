"""The statement sets' read API: sets in the store, statements, verified proofs, the SQL views."""

import pytest

from storage import catalog
from storage.errors import InputError
from storage.statement_sets import (
    add_set,
    check_toolchain,
    claimed_proofs,
    record_verified_proofs,
    statements,
    training_statements,
    verified_proofs,
)
from storage.statement_sets.build import BuildOptions, build_table, content_hash
from storage.store import Store

HEADER = "import Mathlib\nopen Real\n"


def rec(name, statement, row, split=None, proof=None, header=HEADER):
    return {"name": name, "statement": statement, "header": header, "split": split, "proof": proof, "row": row}


def put(store, name, records, **meta):
    table, _ = build_table(records, f"{name}.jsonl", {"statement": "statement"}, name, BuildOptions())
    meta = {"name": name, "content_hash": content_hash(table), **meta}
    with store.writer():
        return add_set(store, meta, table, replace=meta.pop("replace", False) if "replace" in meta else False)


@pytest.fixture
def store(tmp_path):
    return Store.open(tmp_path / "home")


def test_one_statement_in_two_sets_is_one_theorem_and_a_benchmark_never_trains(store):
    put(
        store,
        "train_set",
        [
            rec("a", "theorem a (x : ℕ) : x + 0 = x := by\n", 0, "train", proof="by simp"),
            rec("b", "theorem b (x y : ℕ) : x + y = y + x := by\n", 1, "train"),
            rec("c", "theorem c : (2 : ℕ) + 2 = 4 := by\n", 2, "train"),
        ],
    )
    # The benchmark states `b` with other names and layout: the same statement id.
    put(store, "bench", [rec("b2", "theorem b2 (m n : ℕ) :\n  m + n = n + m :=", 0, "test")], benchmark=True)
    ids = {r["name"]: r["statement_id"] for r in statements(store)}
    assert ids["b"] == ids["b2"]
    assert [r["name"] for r in training_statements(store)] == ["a", "c"]
    assert [r["name"] for r in claimed_proofs(store)] == ["a"]
    assert verified_proofs(store) == []  # a claimed proof never trains
    row = {
        "statement_id": ids["a"],
        "toolchain": "v4.15.0",
        "proof": "by simp",
        "checker": "repl",
        "verdict": "proved",
        "origin": "claimed",
        "set_name": "train_set",
        "name": "a",
    }
    assert record_verified_proofs(store, [row]) == 1
    assert record_verified_proofs(store, [row]) == 0
    got = verified_proofs(store)
    assert [(g["name"], g["proof"], g["verdict_level"]) for g in got] == [("a", "by simp", "elaborator-checked")]
    assert got[0]["header"] == HEADER and got[0]["statement"] == "theorem a (x : ℕ) : x + 0 = x :="
    with pytest.raises(ValueError, match="only proofs a verifier called proved"):
        record_verified_proofs(store, [{**row, "checker": "replay"}])
    view = catalog.query(store, 'SELECT "set", name, verified_proof FROM statements ORDER BY "set", name').to_pylist()
    assert [(v["set"], v["name"], v["verified_proof"]) for v in view] == [
        ("bench", "b2", False),
        ("train_set", "a", True),
        ("train_set", "b", False),
        ("train_set", "c", False),
    ]


def test_the_same_content_is_unchanged_other_content_needs_replace(store):
    assert put(store, "s", [rec("a", "theorem a : True :=", 0)]) == "added"
    assert put(store, "s", [rec("a", "theorem a : True :=", 0)]) == "unchanged"
    with pytest.raises(InputError, match="other content"):
        put(store, "s", [rec("a", "theorem a : False :=", 0)])
    assert put(store, "s", [rec("a", "theorem a : False :=", 0)], replace=True) == "replaced"
    assert [r["statement"] for r in statements(store)] == ["theorem a : False :="]
    assert len(list((store.root / "statements").iterdir())) == 1


def test_a_set_refuses_a_toolchain_it_was_not_written_for(store):
    put(store, "s", [rec("a", "theorem a : True :=", 0)], lean_version="v4.15.0")
    check_toolchain(store, "s", "leanprover/lean4:v4.15.0")
    check_toolchain(store, "s", None)
    with pytest.raises(InputError, match="written for Lean v4.15.0, the backend checks with Lean v4.9.0") as e:
        check_toolchain(store, "s", "v4.9.0")
    assert "\n" not in str(e.value)
