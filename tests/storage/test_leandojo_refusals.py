"""What the import once accepted and must refuse (issue 26 C, "Import accepts what it should
refuse"): each is one line naming the input, exit code 2 through `dojoflow import`, and no
store written; each also through the record-by-record checks (`split_fast` off)."""

import json
from pathlib import Path

import pytest

from storage.errors import InputError
from storage.leandojo import read_export

from .conftest import load_split
from .test_leandojo_hostile import _export, _refused, _set_first

# A body without `:=`: equations (`| 0 => ...`), a `where` block, a termination hint. The
# statement is LeanDojo's signature, so a body is no statement (the verifier would append
# a proof after it).
BODIES = {
    "equations": "theorem thm0 : Nat → Nat\n  | 0 => rfl\n  | n + 1 => rfl",
    "where": "theorem thm0 (n m : Nat) : n = n where\n  aux : True",
    "termination_by": "theorem thm0 (n : Nat) : n = n\ntermination_by n",
    "decreasing_by": "theorem thm0 (n : Nat) : n = n\ndecreasing_by simp",
}


@pytest.mark.parametrize("case", sorted(BODIES))
def test_a_statement_with_a_body_without_assign_is_refused(tmp_path, case, monkeypatch):
    exp = _export(tmp_path)
    _set_first(exp, theorem_statement=BODIES[case])
    _refused(tmp_path, exp, r"random/train.json, record 0 \(.*\): field `theorem_statement` .*body")
    import storage.leandojo.theorems as theorems

    monkeypatch.setattr(theorems, "split_fast", lambda *a: None)
    with pytest.raises(InputError, match="body"):
        read_export(exp)


@pytest.mark.parametrize(
    "statement",
    [
        "theorem thm0 (a : Int) : |a| = |a| :=",  # Mathlib's absolute value
        "theorem thm0 (f : Nat → Nat) : f = fun | 0 => 0 | n + 1 => f (n + 1) :=",
        "theorem thm0 (n : Nat) : (match n with | 0 => 0 | k + 1 => k) ≤ n :=",
        "theorem thm0 (s : Set Nat) : s = {x | x ∈ s}",
    ],
)
def test_a_type_using_bars_is_still_accepted(tmp_path, statement):
    exp = _export(tmp_path)
    _set_first(exp, theorem_statement=statement)
    assert read_export(exp)[0].theorems.num_rows == 8


def _edit_novel_premises(exp: Path, name: str, **changes) -> None:
    for split in ("train", "val", "test"):
        path = exp / "novel_premises" / f"{split}.json"
        recs = load_split(path)
        for r in recs:
            if r["full_name"] == name:
                r.update(changes)
        path.write_text(json.dumps(recs))


@pytest.mark.parametrize(
    "changes",
    [{"theorem_statement": "theorem thm0 (n m : Nat) (h : n ≤ m + 0) : n ≤ m + 1"}, {"end": [44, 11]}],
    ids=["statement", "end"],
)
def test_one_theorem_different_in_the_two_split_kinds_is_refused(tmp_path, changes):
    exp = _export(tmp_path)
    name = load_split(exp / "random" / "train.json")[0]["full_name"]
    _edit_novel_premises(exp, name, **changes)
    field = next(iter(changes))
    _refused(
        tmp_path,
        exp,
        rf"novel_premises/\w+.json, record \d+ \({name}\): field `{field}` differs from the same theorem's "
        r"record in random/",
    )


def _metadata(exp: Path) -> dict:
    return json.loads((exp / "metadata.json").read_text())


def test_a_record_at_another_commit_of_the_traced_repository_is_refused(tmp_path):
    exp = _export(tmp_path)
    from_repo = _metadata(exp)["from_repo"]
    _set_first(exp, commit="0" * 40)
    _refused(
        tmp_path,
        exp,
        rf"random/train.json, record 0 \(.*\): the record.s commit 0{{40}} is not "
        rf"{from_repo['commit']}, which metadata.json declares for",
    )


def test_a_record_under_another_url_at_the_traced_commit_is_refused(tmp_path):
    exp = _export(tmp_path)
    _set_first(exp, url="https://dojoflow.invalid/synthetic/other")
    _refused(
        tmp_path,
        exp,
        r"random/train.json, record 0 \(.*\): the record's url .*other is not .*, which metadata.json declares for",
    )


def test_dependencies_at_their_own_url_and_commit_are_still_read(export_with_dep):
    """A dependency (std) beside the traced repository: another url at another commit."""
    assert len(read_export(export_with_dep)) == 2


@pytest.mark.parametrize(
    "tactic", ['#eval IO.Process.run {cmd := "id"}', 'simp\n#eval IO.Process.run {cmd := "id"}', "exact h\ntheorem x"]
)
def test_a_traced_tactic_holding_a_command_is_refused(tmp_path, tactic, monkeypatch):
    exp = _export(tmp_path)
    recs = load_split(exp / "random" / "train.json")
    recs[0]["traced_tactics"][0]["tactic"] = tactic
    (exp / "random" / "train.json").write_text(json.dumps(recs))
    _refused(tmp_path, exp, r"random/train.json, record 0 \(.*\), tactic 0: field `tactic` holds a command")
    import storage.leandojo.theorems as theorems

    monkeypatch.setattr(theorems, "split_fast", lambda *a: None)
    with pytest.raises(InputError, match="holds a command"):
        read_export(exp)


def test_a_tactic_with_a_cardinality_is_accepted(tmp_path):
    exp = _export(tmp_path)
    recs = load_split(exp / "random" / "train.json")
    recs[0]["traced_tactics"][0]["tactic"] = 'rw [Finset.card_eq] -- #eval in a comment\nsimp [#s, "#eval"]'
    (exp / "random" / "train.json").write_text(json.dumps(recs))
    assert read_export(exp)[0].tactics.num_rows > 0


@pytest.mark.parametrize("name", ["random/val.json", "corpus.jsonl", "metadata.json"])
def test_a_symlink_loop_is_one_line(tmp_path, name):
    exp = _export(tmp_path)
    path = exp / name
    path.unlink()
    path.symlink_to(path.name + ".loop")
    (path.parent / (path.name + ".loop")).symlink_to(path.name)
    _refused(tmp_path, exp, rf"{name}: .*symbolic link.*loop")


@pytest.mark.parametrize("url", ["ext::sh -c id", "fd::3", "-uhttps://x/y"])
def test_a_url_git_would_run_as_a_command_is_refused(tmp_path, url):
    exp = _export(tmp_path)
    _set_first(exp, url=url)
    meta = _metadata(exp)
    meta["from_repo"]["url"] = url
    (exp / "metadata.json").write_text(json.dumps(meta))
    _refused(tmp_path, exp, r"random/train.json, record 0 \(.*\): the url .* is not a repository url")
