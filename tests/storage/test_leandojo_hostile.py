"""Hostile LeanDojo exports (issue 15 part B, issue 16 §5): each is one line naming the
input, what is wrong and the fix, exit code 2 through `dojoflow import`, and no store
written. Files an export may not hold: devices, FIFOs, links leaving it, linked folders,
names that are not UTF-8; records: NUL in paths or names, names that are not one Lean
name, statements that are not one declaration's signature."""

import json
import os
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from flows.cli import app
from storage.errors import InputError
from storage.leandojo import read_export, write_export
from storage.leandojo.files import MAX_METADATA_BYTES
from storage.store import Store
from storage.synthetic import write_synthetic_export

from .conftest import load_split


def _export(tmp_path: Path, name: str = "alpha") -> Path:
    return write_synthetic_export(tmp_path / name, name, 8, 2, seed=5)


def _refused(tmp_path: Path, export, pattern: str) -> str:
    """Run `dojoflow import EXPORT`; assert exit 2, one line matching `pattern`, no store."""
    home = tmp_path / "home"
    out = CliRunner().invoke(app, ["import", str(export), "--home", str(home)], env={"COLUMNS": "400"})
    lines = [line for line in out.output.splitlines() if line.strip()]
    assert out.exit_code == 2, out.output
    assert len(lines) == 1, out.output
    assert re.search(pattern, lines[0]), lines[0]
    assert not home.exists()
    return lines[0]


def _replace_with_link(path: Path, target) -> None:
    path.unlink()
    path.symlink_to(target)


# -- files that are not the export's regular files -------------------------------------
def test_metadata_linked_to_dev_zero_is_refused(tmp_path):
    exp = _export(tmp_path)
    _replace_with_link(exp / "metadata.json", "/dev/zero")
    _refused(tmp_path, exp, r"metadata.json: is a symbolic link to /dev/zero, outside the export")


def test_corpus_linked_to_dev_urandom_is_refused(tmp_path):
    exp = _export(tmp_path)
    _replace_with_link(exp / "corpus.jsonl", "/dev/urandom")
    _refused(tmp_path, exp, r"corpus.jsonl: is a symbolic link to /dev/urandom, outside the export")


def test_a_fifo_as_a_split_file_is_refused_without_blocking(tmp_path):
    exp = _export(tmp_path)
    (exp / "random" / "val.json").unlink()
    os.mkfifo(exp / "random" / "val.json")
    _refused(tmp_path, exp, r"random/val.json: is not a regular file \(a FIFO\). .*copy the data into the export")


def test_a_device_node_inside_the_export_is_refused(tmp_path):
    exp = _export(tmp_path)
    # a link that stays inside the export but ends at a device is not a regular file either
    (exp / "dev").symlink_to("/dev/zero")
    _replace_with_link(exp / "metadata.json", "dev")
    _refused(tmp_path, exp, r"metadata.json: is a symbolic link to /dev/zero, outside the export")


def test_a_file_over_its_size_limit_is_refused_before_it_is_read(tmp_path):
    exp = _export(tmp_path)
    with open(exp / "metadata.json", "r+b") as f:  # sparse: no disk space used
        f.truncate(MAX_METADATA_BYTES + 1)
    _refused(tmp_path, exp, rf"metadata.json: holds {MAX_METADATA_BYTES + 1} bytes or more, above the limit")


@pytest.mark.parametrize("name", ["random/train.json", "corpus.jsonl", "metadata.json"])
def test_a_link_that_leaves_the_export_is_refused(tmp_path, name):
    exp = _export(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "copy").write_bytes((exp / name).read_bytes())  # the same, valid, content
    _replace_with_link(exp / name, outside / "copy")
    _refused(tmp_path, exp, rf"{re.escape(name)}: is a symbolic link to .*outside/copy, outside the export")


def test_a_linked_split_folder_is_refused(tmp_path):
    exp = _export(tmp_path)
    moved = tmp_path / "elsewhere"
    (exp / "novel_premises").rename(moved)
    (exp / "novel_premises").symlink_to(moved, target_is_directory=True)
    _refused(tmp_path, exp, r"novel_premises: is a symbolic link to a folder. copy the folder into the export")


def test_a_link_that_stays_inside_the_export_is_read(tmp_path):
    exp = _export(tmp_path)
    (exp / "corpus-data.jsonl").write_bytes((exp / "corpus.jsonl").read_bytes())
    _replace_with_link(exp / "corpus.jsonl", "corpus-data.jsonl")
    assert read_export(exp)[0].premises.num_rows > 0


def test_an_export_folder_whose_name_is_not_utf8_is_refused(tmp_path):
    exp = _export(tmp_path)
    bad = Path(os.fsdecode(bytes(tmp_path) + b"/alpha\xff"))
    os.rename(exp, bad)
    line = _refused(tmp_path, bad, r"alpha\\xff: the folder's name is not UTF-8 text. rename the folder")
    assert "\udcff" not in line


def test_an_export_into_a_folder_whose_name_is_not_utf8_is_refused(tmp_path):
    exp = _export(tmp_path)
    home = tmp_path / "home"
    assert CliRunner().invoke(app, ["import", str(exp), "--home", str(home)]).exit_code == 0
    bad = os.fsdecode(bytes(tmp_path) + b"/out\xff")
    out = CliRunner().invoke(app, ["export", bad, "--home", str(home)], env={"COLUMNS": "400"})
    assert out.exit_code == 2, out.output
    assert "out\\xff: the folder's name is not UTF-8 text" in out.output
    assert not os.path.lexists(bad)


def test_deeply_nested_metadata_is_one_line_through_the_cli(tmp_path):
    exp = _export(tmp_path)
    (exp / "metadata.json").write_text('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}")
    _refused(tmp_path, exp, r"metadata.json: JSON nested too deeply to read")


# -- records: what reaches Lean is validated (issue 16 §5) -----------------------------
def _set_first(exp: Path, **changes) -> str:
    """Set fields of the first record of random/train.json and of its copy in
    novel_premises/; return its original full_name."""
    recs = load_split(exp / "random" / "train.json")
    name = recs[0]["full_name"]
    recs[0].update(changes)
    (exp / "random" / "train.json").write_text(json.dumps(recs))
    for split in ("train", "val", "test"):
        path = exp / "novel_premises" / f"{split}.json"
        others = load_split(path)
        for r in others:
            if r["full_name"] == name:
                r.update(changes)
        path.write_text(json.dumps(others))
    return name


HOSTILE = {
    "statement_runs_a_process": (
        {"theorem_statement": 'theorem t : True := trivial\n#eval IO.Process.run {cmd := "sh", args := #["-c", "id"]}'},
        r"field `theorem_statement` holds a second command \(`#eval`\)",
    ),
    "statement_is_a_command": (
        {"theorem_statement": '#eval IO.Process.run {cmd := "id"}'},
        r"field `theorem_statement` does not start with a declaration",
    ),
    "statement_holds_a_second_declaration": (
        {"theorem_statement": "theorem t : True\naxiom cheat : False"},
        r"field `theorem_statement` holds a second command \(`axiom`\)",
    ),
    "statement_holds_nul": (
        {"theorem_statement": "theorem t : True\x00"},
        r"field `theorem_statement` holds a control character \(U\+0000\)",
    ),
    "name_holds_a_command": (
        {"full_name": 'Alpha.thm0\n#eval IO.Process.run {cmd := "id"}'},
        r"field `full_name` 'Alpha.thm0\\n#eval .* holds a control character \(U\+000A\)",
    ),
    # issue 16 review: verdicts are about the constant the statement declares, so the record's
    # full_name must be that constant (a statement `one_mul'` filed as `Nat.one_mul` is refused)
    "statement_declares_another_constant": (
        {"full_name": "Nat.one_mul", "theorem_statement": "theorem one_mul' (n : Nat) : 1 * n = n :="},
        r"field `theorem_statement` declares `one_mul'`, which is not the end of full_name `Nat.one_mul`",
    ),
    # a statement with a proof body is no signature (the fast pass once accepted both)
    "statement_holds_a_body": (
        {"theorem_statement": "theorem t : True := by native_decide"},
        r"field `theorem_statement` the statement holds a body",
    ),
    "statement_holds_a_where_body": (
        {"theorem_statement": "theorem t : True where foo := 1"},
        r"field `theorem_statement` the statement holds a body",
    ),
    "name_holds_nul": ({"full_name": "Alpha.thm\x000"}, r"field `full_name` .* holds a control character \(U\+0000\)"),
    "name_is_not_a_lean_name": ({"full_name": "Alpha thm0"}, r"field `full_name` 'Alpha thm0' is not a Lean name"),
    "path_holds_nul": (
        {"file_path": "Alpha/File0.lean\x00.txt"},
        r"file path 'Alpha/File0.lean\\x00.txt' holds a control character \(U\+0000\)",
    ),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_hostile_record_is_named_and_nothing_is_written(tmp_path, case):
    changes, pattern = HOSTILE[case]
    exp = _export(tmp_path)
    _set_first(exp, **changes)
    _refused(tmp_path, exp, r"random/train.json, record 0 \(.*\): " + pattern)


def test_a_hostile_record_is_refused_through_both_reading_paths(tmp_path, monkeypatch):
    """The record-by-record checks refuse what the fast path refuses."""
    import storage.leandojo.theorems as theorems

    exp = _export(tmp_path)
    _set_first(exp, theorem_statement='theorem t : True := by run_tac (IO.Process.run {cmd := "id"})')
    with pytest.raises(InputError, match=r"holds a second command \(`run_tac`\)"):
        read_export(exp)
    monkeypatch.setattr(theorems, "split_fast", lambda *a: None)
    with pytest.raises(InputError, match=r"holds a second command \(`run_tac`\)"):
        read_export(exp)


@pytest.mark.parametrize(
    "changes,pattern",
    [
        ({"full_name": "Nat.one_mul", "theorem_statement": "theorem one_mul' (n : Nat) : 1 * n = n"}, "declares"),
        ({"theorem_statement": "theorem t : True := by native_decide"}, "holds a body"),
        ({"theorem_statement": "theorem t : True where foo := 1"}, "holds a body"),
    ],
    ids=["name", "body", "where"],
)
def test_a_mismatched_name_or_a_body_is_refused_through_both_reading_paths(tmp_path, monkeypatch, changes, pattern):
    import storage.leandojo.theorems as theorems

    exp = _export(tmp_path)
    _set_first(exp, **changes)
    with pytest.raises(InputError, match=pattern):
        read_export(exp)
    monkeypatch.setattr(theorems, "split_fast", lambda *a: None)
    with pytest.raises(InputError, match=pattern):
        read_export(exp)


def test_a_control_character_in_a_corpus_path_or_premise_name_is_named(tmp_path):
    exp = _export(tmp_path)
    corpus = [json.loads(x) for x in (exp / "corpus.jsonl").read_text().splitlines()]
    corpus[1]["premises"][0]["full_name"] = "Alpha.p\x00"
    (exp / "corpus.jsonl").write_text("".join(json.dumps(c) + "\n" for c in corpus))
    with pytest.raises(InputError, match=r"corpus.jsonl, line 2, premise 0: field `full_name` holds a control"):
        read_export(exp)


def test_real_statements_and_names_are_accepted(tmp_path):
    """Shapes LeanDojo writes (its statement runs from the modifiers to the proof, so
    it may end in `:=`) and Lean names with escapes, numbers and subscripts."""
    exp = _export(tmp_path)
    _set_first(
        exp,
        full_name="_private.Alpha.File0.0.«term_∣_».Foo.thm₁'",
        theorem_statement='@[simp, to_additive "[x]"]\nprotected theorem Foo.thm₁\' {α : Type*} (s : Finset α) :\n'
        "    #s ≤ #s :=",
    )
    data = read_export(exp)[0]
    assert "_private.Alpha.File0.0.«term_∣_».Foo.thm₁'" in data.theorems["full_name"].to_pylist()


def test_an_export_written_from_the_store_is_read_back(tmp_path):
    """What Dojoflow writes passes its own checks (the store holds only checked text)."""
    store = Store.open(tmp_path / "h")
    from storage.leandojo import import_export

    import_export(store, _export(tmp_path))
    out = write_export(store, tmp_path / "out", store.repo_ids())
    assert read_export(out)[0].theorems.num_rows == 8
