"""A statement's parts, id, split and header rules; a killed import leaves nothing visible."""

import pytest

from storage.errors import InputError
from storage.splits import SplitSettings
from storage.statement_sets import add_set, list_sets, statement_id
from storage.statement_sets.identity import import_problem, normalise_header, same_lean, split_of, split_statement
from storage.statement_sets.presets import detect
from storage.statement_sets.reader import StatementSetConfig, read_set
from storage.store import Store


def test_split_statement_finds_the_top_level_assign_as_lean_reads_it():
    # a `:=` inside a binder's default, a comment or a string is not the declaration's
    text = 'theorem t (f : ℕ → ℕ := fun x => x) : f 1 = 1 := by\n  -- a := b\n  simp [show "a:=" = "a:=" from rfl]'
    stated, body = split_statement(text)
    assert stated == "theorem t (f : ℕ → ℕ := fun x => x) : f 1 = 1 :=" and body.startswith("by\n  -- a := b")
    assert split_statement("theorem t : True") is None
    assert split_statement("theorem t : True := by\n") == ("theorem t : True :=", "")


def test_the_id_ignores_names_layout_comments_and_header_order_but_not_the_header():
    a = statement_id("theorem a (x : ℕ) : x = x :=", "import Mathlib\nopen Real\n")
    b = statement_id("lemma b (y : ℕ) :\n    y = y := -- c\n", "open Real -- why\nimport Mathlib")
    assert a == b
    assert a != statement_id("theorem a (x : ℕ) : x = x :=", "import Mathlib\nopen Nat\n")
    assert normalise_header("/- c -/ import Mathlib\n\n  open   Real\n") == "import Mathlib\nopen Real"
    # two copies of miniF2F's header, differing in a resource limit and in imports Mathlib brings
    deepseek = (
        "import Mathlib\nimport Aesop\n\nset_option maxHeartbeats 0\n\nopen BigOperators Real Nat Topology Rat\n\n"
    )
    other = "import Mathlib\nimport Aesop\nset_option maxHeartbeats 400000\nopen BigOperators Real Nat Topology Rat\n"
    assert (
        normalise_header(deepseek)
        == normalise_header(other)
        == "import Mathlib\nopen BigOperators Real Nat Topology Rat"
    )
    assert normalise_header("import Aesop\nopen Real") == "import Aesop\nopen Real"  # without Mathlib, Aesop counts


def test_splits_from_the_id_are_fixed_and_follow_the_fractions():
    settings = SplitSettings(val_fraction=0.2, test_fraction=0.2)
    ids = [statement_id(f"theorem t : {i} = {i} :=") for i in range(2000)]
    splits = [split_of(i, settings) for i in ids]
    assert splits == [split_of(i, settings) for i in ids]
    assert 0.15 < splits.count("val") / 2000 < 0.25 and 0.15 < splits.count("test") / 2000 < 0.25


def test_imports_and_lean_versions():
    assert import_problem("import Mathlib\nimport Aesop\nimport Batteries.Data.List") is None
    assert "Lean 3 module" in import_problem("import tactic")
    assert import_problem("import MyLib.X", ("MyLib",)) is None
    assert same_lean("v4.15.0", "leanprover/lean4:v4.15.0") and same_lean("4.15", "v4.15.2")
    assert not same_lean("v4.15.0", "v4.9.0") and not same_lean("v4.17.0-rc1", "v4.17.0-rc2")
    assert same_lean(None, "v4.9.0") and same_lean("v4.9.0", None)


def test_presets_are_detected_only_by_their_exact_columns():
    assert detect(["name", "split", "informal_prefix", "formal_statement", "goal", "header"]).name == "deepseek"
    assert detect(["name", "statement"]).name == "lean_grpo"
    assert detect(["statement", "proof", "source", "lean_version"]).name == "table"
    assert detect(["problem_id", "full_proof"]).name == "goedel"
    assert detect(["name", "formal_statement"]) is None  # deepseek's other columns are missing
    assert detect(["statement", "mystery"]) is None


def test_a_hub_id_offline_is_one_line(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(InputError, match="could not be loaded from the hub") as e:
        read_set(StatementSetConfig(path="AI-MO/NuminaMath-LEAN"))
    assert "\n" not in str(e.value)


def test_a_set_a_killed_import_staged_is_never_listed_and_the_next_writer_removes_it(tmp_path):
    store = Store.open(tmp_path / "home")
    staged = store.root / "statements" / "ghost@0123456789ab"
    staged.mkdir(parents=True)
    (staged / "set.json").write_text('{"name": "ghost"}')
    orphan = store.root / "statements" / "x@1.tmp-abc"
    orphan.mkdir()
    assert list_sets(store) == []
    table, meta = read_set(StatementSetConfig(path=str(_file(tmp_path)), preset="table"))
    with store.writer():
        add_set(store, meta, table)
    assert [m["name"] for m in list_sets(store)] == ["s"]
    assert not staged.exists() and not orphan.exists()


def _file(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_text('{"statement": "theorem s : True := by sorry"}\n')
    return path


def test_the_gate_fingerprint_ignores_what_follows_the_final_assign():
    """A defect of the gate's normalise (fixed here): `:=` followed by a comment or a newline kept
    the `:=` as a token, so `theorem a : P :=\\n` and `theorem a : P :=` had two fingerprints."""
    from storage.contamination import fingerprint

    assert fingerprint("theorem a (x : ℕ) : x = x := -- c\n") == fingerprint("theorem a (x : ℕ) : x = x :=")
    assert fingerprint("theorem a (x : ℕ) : x = x :=\n") == fingerprint("theorem a (x : ℕ) : x = x")
