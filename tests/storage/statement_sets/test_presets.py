"""Each preset on a small file built in its format's exact shape, and on real files of the projects
(tests/storage/statement_sets/data/ORIGIN.md): the formats as docs/statement-sets.md cites them."""

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from storage.errors import InputError
from storage.statement_sets.reader import StatementSetConfig, read_set

DATA = Path(__file__).parent / "data"
MINIF2F_HEADER = (
    "import Mathlib\nimport Aesop\n\nset_option maxHeartbeats 400000\n\nopen BigOperators Real Nat Topology Rat\n\n"
)


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def read(path, **kw):
    table, meta = read_set(StatementSetConfig(path=str(path), **kw))
    return table.to_pylist(), meta


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def test_deepseek_jsonl_is_detected_and_its_trailing_by_is_the_format(tmp_path):
    rows = [
        {
            "name": "mathd_algebra_10",
            "split": "valid",
            "informal_prefix": "/-- Compute. -/\n",
            "formal_statement": "theorem mathd_algebra_10 : abs ((120 : ℝ) / 100 * 30 - 130 / 100 * 20) = 10 := by\n",
            "goal": "⊢ |120 / 100 * 30 - 130 / 100 * 20| = 10",
            "header": MINIF2F_HEADER,
        },
        {
            "name": "exercise_1_1",
            "split": "test",
            "informal_prefix": "/-- Show. -/\n",
            "formal_statement": "theorem exercise_1_1 (x : ℝ) (h : 0 < x) :\n  0 < x ^ 2 :=",
            "goal": "",
            "header": MINIF2F_HEADER,
        },
    ]
    got, meta = read(write_jsonl(tmp_path / "minif2f.jsonl", rows))
    assert meta["preset"] == "deepseek" and meta["name"] == "minif2f"
    assert [g["statement"] for g in got] == [
        "theorem mathd_algebra_10 : abs ((120 : ℝ) / 100 * 30 - 130 / 100 * 20) = 10 :=",
        "theorem exercise_1_1 (x : ℝ) (h : 0 < x) :\n  0 < x ^ 2 :=",
    ]
    assert [g["split"] for g in got] == ["val", "test"] and {g["split_source"] for g in got} == {"set"}
    assert all(g["claimed_proof"] is None for g in got)  # `by` is no body
    assert got[0]["header"] == MINIF2F_HEADER and got[0]["informal"] == "/-- Compute. -/\n"
    assert json.loads(got[0]["extra"]) == {"goal": rows[0]["goal"]}


def test_lean_grpo_theorem_file_gets_a_header_from_its_imports_and_context(tmp_path):
    rows = [
        {
            "name": "t1",
            "statement": "theorem t1 (n : Nat) : n + 0 = n",
            "imports": ["Mathlib"],
            "context": "open Nat\n",
        },
        {"name": "t2", "statement": "theorem t2 : True"},
    ]
    got, meta = read(write_jsonl(tmp_path / "grpo.jsonl", rows))
    assert meta["preset"] == "lean_grpo"
    assert (
        got[0]["header"] == "import Mathlib\nopen Nat\n"
        and got[0]["statement"] == "theorem t1 (n : Nat) : n + 0 = n :="
    )
    assert got[1]["header"] == "" and got[1]["split_source"] == "fingerprint"


def test_putnambench_files_built_in_their_shape(tmp_path):
    src = tmp_path / "lean4" / "src"
    src.mkdir(parents=True)
    (tmp_path / "lean4" / "lean-toolchain").write_text("leanprover/lean4:v4.9.0\n")
    (src / "putnam_2000_a1.lean").write_text(
        "import Mathlib\n\nopen Real\n\nabbrev putnam_2000_a1_solution : ℕ := sorry\n-- 3\n/--\nFind it.\n-/\n"
        "theorem putnam_2000_a1\n(n : ℕ)\n: n = putnam_2000_a1_solution :=\nsorry\n"
    )
    got, meta = read(src, benchmark=True)
    assert meta["preset"] == "putnambench" and meta["lean_version"] == "v4.9.0"
    (g,) = got
    assert g["name"] == "putnam_2000_a1" and g["informal"] == "Find it." and g["split"] == "test"
    assert g["header"].endswith("abbrev putnam_2000_a1_solution : ℕ := sorry\n-- 3\n")
    assert g["statement"] == "theorem putnam_2000_a1\n(n : ℕ)\n: n = putnam_2000_a1_solution :="


NUMINA_COLUMNS = [
    "uuid",
    "problem",
    "question_type",
    "answer",
    "author",
    "formal_statement",
    "formal_ground_truth",
    "ground_truth_type",
    "formal_proof",
    "rl_data",
    "source",
    "problem_type",
    "exam",
]


def numina_row(uuid, statement, truth, kind):
    return {
        "uuid": uuid,
        "problem": "Show it.",
        "question_type": "proof",
        "answer": "proof",
        "author": "human",
        "formal_statement": statement,
        "formal_ground_truth": truth,
        "ground_truth_type": kind,
        "formal_proof": "",
        "rl_data": {"n_correct_proofs": 1, "n_proofs": 2, "win_rate": 0.5},
        "source": "olympiads",
        "problem_type": "Algebra",
        "exam": None,
    }


def test_numina_parquet_separates_the_header_and_claims_only_complete_proofs(tmp_path):
    stmt = "import Mathlib\n\ntheorem algebra_1 (x : ℝ) (h : x = 2) : x ^ 2 = 4 := by sorry"
    proof = "import Mathlib\n\ntheorem algebra_1 (x : ℝ) (h : x = 2) : x ^ 2 = 4 := by\n  subst h\n  norm_num"
    rows = [
        numina_row("u1", stmt, proof, "complete"),
        numina_row(
            "u2",
            stmt.replace("algebra_1", "algebra_2").replace("= 2", "= 3").replace("= 4", "= 9"),
            "import Mathlib\n\ntheorem algebra_2 : False := by\n  sorry",
            "with_sorry",
        ),
    ]
    path = tmp_path / "numina.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    got, meta = read(path, lean_version="v4.15.0")
    assert meta["preset"] == "numina" and meta["lean_version"] == "v4.15.0"
    assert got[0]["header"] == "import Mathlib\n\n" and got[0]["statement"].endswith("x ^ 2 = 4 :=")
    assert got[0]["claimed_proof"] == "by\n  subst h\n  norm_num" and got[1]["claimed_proof"] is None
    assert got[0]["source"] == "olympiads" and got[0]["informal"] == "Show it."


def test_goedel_proof_table_takes_the_statement_from_the_proof(tmp_path):
    full = "import Mathlib\nimport Aesop\nset_option maxHeartbeats 400000\n\ntheorem lean_workbook_1 (a : ℝ) : a ^ 2 ≥ 0 := by\n  nlinarith [sq_nonneg a]"
    path = tmp_path / "goedel.parquet"
    pq.write_table(pa.Table.from_pylist([{"problem_id": "lean_workbook_1", "full_proof": full}]), path)
    (g,), meta = read(path)
    assert meta["preset"] == "goedel"
    assert g["statement"] == "theorem lean_workbook_1 (a : ℝ) : a ^ 2 ≥ 0 :="
    assert g["claimed_proof"] == "by\n  nlinarith [sq_nonneg a]" and g["header"].startswith("import Mathlib\n")


def test_a_table_with_a_column_mapping_in_every_container(tmp_path):
    import datasets

    rows = [{"thm": "theorem x1 : 1 + 1 = 2 := by sorry", "id": "x1", "ver": "v4.15.0", "origin": "pset"}]
    mapping = {"statement": "thm", "name": "id", "lean_version": "ver", "source": "origin"}
    ds = datasets.Dataset.from_list(rows)
    ds.save_to_disk(str(tmp_path / "saved"))
    ds.to_parquet(str(tmp_path / "t.parquet"))
    (tmp_path / "t.json").write_text(json.dumps(rows))
    arrow = tmp_path / "t.arrow"
    with pa.OSFile(str(arrow), "wb") as sink, pa.ipc.new_stream(sink, ds.data.table.schema) as writer:
        writer.write_table(ds.data.table)
    for path in ("saved", "t.parquet", "t.json", "t.arrow"):
        (g,), meta = read(tmp_path / path, columns=mapping, name="pset")
        assert (g["name"], g["statement"], g["lean_version"], g["source"]) == (
            "x1",
            "theorem x1 : 1 + 1 = 2 :=",
            "v4.15.0",
            "pset",
        ), path
        assert meta["lean_version"] == "v4.15.0" and meta["preset"] is None
    (g,), meta = read(tmp_path / "t.parquet", preset="table", columns={"statement": "thm"})
    assert g["name"] == "row0" and json.loads(g["extra"]) == {"id": "x1", "ver": "v4.15.0", "origin": "pset"}


def test_real_deepseek_minif2f_and_proofnet_excerpts():
    got, meta = read(DATA / "deepseek_minif2f_excerpt.jsonl")
    assert meta["preset"] == "deepseek" and len(got) == 6
    assert [g["split"] for g in got] == ["val"] * 4 + ["test"] * 2
    assert all(g["statement"].endswith(":=") and g["claimed_proof"] is None for g in got)
    assert got[0]["name"] == "amc12a_2019_p21" and got[0]["header"].startswith("import Mathlib\nimport Aesop")
    got, meta = read(DATA / "deepseek_proofnet_excerpt.jsonl")
    assert meta["preset"] == "deepseek" and [g["name"] for g in got] == [
        "exercise_1_13a",
        "exercise_1_13b",
        "exercise_1_13c",
    ]
    assert got[0]["statement"].endswith("f a = f b :=")  # ProofNet's end in `:=` without `by`


def test_real_putnambench_files_with_their_toolchain():
    got, meta = read(DATA / "putnambench" / "lean4" / "src", benchmark=True, publish_proofs=False)
    assert meta["preset"] == "putnambench" and meta["lean_version"] == "v4.27.0"
    assert meta["mathlib_version"] == "v4.27.0" and meta["publish_proofs"] is False
    assert [g["name"] for g in got] == ["putnam_1962_a1", "putnam_1965_a1", "putnam_1981_b2"]
    assert (
        got[1]["header"].rstrip().endswith("noncomputable abbrev putnam_1965_a1_solution : ℝ := sorry\n-- Real.pi / 15")
    )
    assert got[0]["informal"].startswith("Given five points in a plane")
    assert all(g["split"] == "test" and g["statement"].endswith(":=") for g in got)


def test_one_split_of_a_file_is_a_set_of_its_own():
    got, meta = read(DATA / "deepseek_minif2f_excerpt.jsonl", split="test", benchmark=True)
    assert meta["name"] == "deepseek_minif2f_excerpt-test" and [g["split"] for g in got] == ["test", "test"]
    assert [g["row"] for g in got] == [4, 5]  # rows keep their place in the file
    got, _ = read(DATA / "deepseek_minif2f_excerpt.jsonl", split="valid")
    assert len(got) == 4
    with pytest.raises(InputError, match="holds no row of split 'train'"):
        read(DATA / "deepseek_minif2f_excerpt.jsonl", split="train")


def test_real_goedel_putnam_jsonl_excerpt():
    got, meta = read(DATA / "goedel_putnam_excerpt.jsonl", benchmark=True, publish_proofs=False)
    assert meta["preset"] == "putnam_jsonl" and len(got) == 3 and {g["split"] for g in got} == {"test"}
    assert got[0]["name"] == "putnam_2010_a4" and got[0]["header"].startswith("import Mathlib\n\n/--")
    assert got[0]["statement"].startswith("theorem putnam_2010_a4\n") and got[0]["statement"].endswith(":=")
    assert got[0]["informal"].startswith("Prove that for each positive integer")
    assert json.loads(got[0]["extra"])["tags"] == ["number_theory"]
