"""Claimed proofs become verified only by a Lean verdict (the real kimina server over the Lean
process double, tests/doubles/kimina_server.py); a set written for another Lean is refused first."""

import json

from typer.testing import CliRunner

from flows.cli import app
from storage.statement_sets import claimed_proofs, training_statements, verified_proofs
from storage.statement_sets.reader import StatementSetConfig, import_set
from storage.store import Store
from tests.doubles.kimina_server import API_KEY

DE_MORGAN = "by\n  intro h\n  by_cases hp : p\n  exact Or.inr (fun hq => h ⟨hp, hq⟩)\n  exact Or.inl hp"
STATEMENT = "theorem de_morgan_classical (p q : Prop) : ¬(p ∧ q) → ¬p ∨ ¬q := by sorry"
runner = CliRunner()


def make_set(tmp_path, rows, **kw):
    store = Store.open(tmp_path / "home")
    path = tmp_path / "set.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    import_set(store, StatementSetConfig(path=str(path), name="logic", preset="table", **kw))
    return store


def test_a_set_for_another_lean_is_refused_in_one_line_before_any_check(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    store = make_set(
        tmp_path, [{"statement": STATEMENT, "proof": DE_MORGAN, "header": "import Init"}], lean_version="v4.15.0"
    )
    r = runner.invoke(
        app,
        [
            "verify-statements",
            "logic",
            "--kimina-url",
            "http://127.0.0.1:9",
            "--lean-version",
            "v4.20.0",
            "--home",
            str(store.root.parent),
        ],
        catch_exceptions=False,
    )
    assert r.exit_code == 2, r.output
    assert len(r.output.strip().splitlines()) == 1 and "Traceback" not in r.output
    assert "written for Lean v4.15.0" in r.output


def test_claimed_proofs_train_only_once_lean_accepts_them(tmp_path, monkeypatch, kimina):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("LEAN_SERVER_API_KEY", API_KEY)
    # A statement the Lean double knows (the sample's NatBasics.one_mul'), with a proof that is no proof of it:
    # the double elaborates declarations it does not model as they are (tests/doubles/lean_process/core.py).
    wrong = "theorem one_mul' (n : Nat) : 1 * n = n := by sorry"
    store = make_set(
        tmp_path,
        [
            {
                "name": "de_morgan_classical",
                "statement": STATEMENT,
                "proof": DE_MORGAN,
                "header": "import Init",
                "split": "train",
            },
            {
                "name": "one_mul_wrong",
                "statement": wrong,
                "proof": "by\n  intro h\n  exact Or.inl hp",
                "header": "import Init",
                "split": "train",
            },
        ],
    )
    assert len(claimed_proofs(store)) == 2 and verified_proofs(store) == []
    r = runner.invoke(
        app,
        ["verify-statements", "logic", "--kimina-url", kimina.url, "--home", str(store.root.parent)],
        catch_exceptions=False,
    )
    assert r.exit_code == 0, r.output
    assert "checked 2 claimed proofs of logic: 1 verified" in r.output
    assert "not accepted: one_mul_wrong (" in r.output and "the double knows no step" in r.output  # Lean's no
    (got,) = verified_proofs(store)
    assert (got["name"], got["origin"], got["checker"], got["proof"]) == (
        "de_morgan_classical",
        "claimed",
        "kimina",
        DE_MORGAN,
    )
    assert [r["name"] for r in claimed_proofs(store)] == ["one_mul_wrong"]
    assert {r["name"] for r in training_statements(store)} == {"de_morgan_classical", "one_mul_wrong"}
