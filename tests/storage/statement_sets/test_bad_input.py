"""Bad statement sets: one line naming the file, the row and the field, exit code 2, the store unchanged."""

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from flows.cli import app

from ..conftest import tree_state

runner = CliRunner()
HEADER = "import Mathlib\n"


def invoke(*args):
    return runner.invoke(
        app, [str(a) for a in args], catch_exceptions=False, env={"COLUMNS": "300", "HF_HUB_OFFLINE": "1"}
    )


def jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def ds_row(name, statement, split="test", header=HEADER):
    return {
        "name": name,
        "split": split,
        "informal_prefix": "",
        "formal_statement": statement,
        "goal": "",
        "header": header,
    }


@pytest.fixture
def home(tmp_path):
    home = tmp_path / "home"
    good = jsonl(tmp_path / "good.jsonl", [ds_row("g", "theorem g : True := by\n")])
    assert invoke("import-statements", good, "--home", home).exit_code == 0
    return home


def table(path, rows):
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def cases(tmp):
    ok = "theorem a (n : ℕ) : n = n := by\n"
    return {
        "missing column": (
            [table(tmp / "m.parquet", [{"stmt": "theorem a : True :="}]), "--column", "statement=formal"],
            ["m.parquet", "field `statement`", "has no column 'formal'"],
        ),
        "no := where the format needs one": (
            [jsonl(tmp / "d.jsonl", [ds_row("a", ok), ds_row("b", "theorem b : True")])],
            ["d.jsonl", "row 1, field `formal_statement`", "does not end in `:=`"],
        ),
        "no sorry in a PutnamBench file": (
            [_lean(tmp, "putnam_1_a1", "theorem putnam_1_a1 : True := by trivial\n")],
            ["putnam_1_a1", "row 0, field `file`", "no `sorry` proof"],
        ),
        "a Lean 3 import": (
            [
                jsonl(
                    tmp / "h.jsonl",
                    [ds_row("a", ok), ds_row("b", ok.replace("a (", "b ("), header="import data.real.basic\n")],
                )
            ],
            ["h.jsonl", "row 1, field `header`", "imports `data.real.basic`, a Lean 3 module"],
        ),
        "an import no toolchain has": (
            [jsonl(tmp / "h2.jsonl", [ds_row("a", ok, header="import Mathlib\nimport MyPrivateLib.Foo\n")])],
            ["h2.jsonl", "row 0, field `header`", "imports `MyPrivateLib.Foo`"],
        ),
        "one name, two statements": (
            [jsonl(tmp / "n.jsonl", [ds_row("a", ok), ds_row("a", "theorem a : False := by\n")])],
            ["n.jsonl", "row 1, field `name`", "names `a` as row 0 does, with another statement"],
        ),
        "a proof of another statement": (
            [
                table(
                    tmp / "p.parquet",
                    [
                        {
                            "statement": "theorem p (x : ℕ) : x + 0 = x := by sorry",
                            "proof": "theorem p (x : ℕ) : 0 + x = x := by simp",
                        }
                    ],
                )
            ],
            ["p.parquet", "row 0, field `proof`", "proves another statement than its row's"],
        ),
        "a file that is not Parquet": (
            [_bytes(tmp / "bad.parquet", b"PAR1 not really")],
            ["bad.parquet", "cannot be read"],
        ),
        "a line that is not JSON": (
            [_bytes(tmp / "bad.jsonl", (json.dumps(ds_row("a", ok)) + "\n{oops\n").encode())],
            ["bad.jsonl", "row 1 (line 2)", "cannot be read"],
        ),
        "no such file": ([tmp / "nothing.jsonl"], ["nothing.jsonl", "is no file, folder or hub dataset id"]),
    }


def _lean(tmp, name, text):
    folder = tmp / name
    folder.mkdir()
    (folder / f"{name}.lean").write_text("import Mathlib\n" + text)
    return folder


def _bytes(path, data):
    path.write_bytes(data)
    return path


def test_each_bad_input_is_one_line_exit_2_and_the_store_is_unchanged(home, tmp_path):
    before = tree_state(home / "store")
    for what, (args, expected) in cases(tmp_path).items():
        r = invoke("import-statements", *args, "--home", home)
        assert r.exit_code == 2, (what, r.output)
        lines = r.output.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in r.output, (what, r.output)
        for part in expected:
            assert part in lines[0], (what, part, lines[0])
        assert tree_state(home / "store") == before, what


def test_a_bad_set_never_creates_a_store(tmp_path):
    home = tmp_path / "fresh"
    r = invoke("import-statements", jsonl(tmp_path / "d.jsonl", [ds_row("b", "theorem b : True")]), "--home", home)
    assert r.exit_code == 2 and not home.exists()
