"""Results in the benchmarks' own terms (`dojoflow leaderboard`, the card), publish_proofs: false,
and `dojoflow export-proofs` read back by datasets.load_dataset."""

import json

import pytest
from typer.testing import CliRunner

from flows.cli import app
from storage.statement_sets import record_verified_proofs, set_meta, statements
from storage.statement_sets.reader import StatementSetConfig, import_set
from storage.store import Store
from storage.theorem_results import record_results
from tasks.leaderboard import card_section, leaderboard_rows, unpublished
from tasks.report import _published

runner = CliRunner()
HEADER = "import Mathlib\n"


def invoke(*args):
    return runner.invoke(
        app, [str(a) for a in args], catch_exceptions=False, env={"COLUMNS": "400", "HF_HUB_OFFLINE": "1"}
    )


def jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    store = Store.open(tmp_path / "home")
    bench = [
        {"name": f"p{i}", "statement": f"theorem p{i} (n : ℕ) : n + {i} = {i} + n := by sorry", "header": HEADER}
        for i in range(4)
    ]
    import_set(
        store,
        StatementSetConfig(
            path=str(jsonl(tmp_path / "putnam.jsonl", bench)),
            preset="table",
            benchmark=True,
            publish_proofs=False,
            lean_version="v4.27.0",
            mathlib_version="v4.27.0",
        ),
    )
    train = [
        {
            "name": "t0",
            "statement": "theorem t0 : (1 : ℕ) + 1 = 2 := by sorry",
            "header": HEADER,
            "split": "train",
            "proof": "by norm_num",
        }
    ]
    import_set(store, StatementSetConfig(path=str(jsonl(tmp_path / "train.jsonl", train)), preset="table"))
    return store


def result(name, fp, c, n=8, k=4, tokens=1000.0, status=None, **kw):
    return {
        "repo_id": "benchmark:putnam",
        "theorem_id": name,
        "file_path": "",
        "full_name": name,
        "split": "benchmark",
        "prover": "model",
        "checker": "kimina",
        "generator": "local",
        "n": n,
        "c": c,
        "k": k,
        "pass_at_1": c / n,
        "pass_at_k": 1.0 if c else 0.0,
        "errors": 0,
        "status": status or ("proved" if c else "failed"),
        "benchmark": fp,
        "tokens": tokens,
        **kw,
    }


def test_one_line_per_run_as_the_field_reports_it(store):
    fp = set_meta(store, "putnam")["benchmark_fingerprint"]
    rows = [
        result("p0", fp, 3),
        result("p1", fp, 0),
        result("p2", fp, 1, tokens=2500.0),
        {**result("p3", fp, 0, tokens=None), "status": "untried", "n": 0, "pass_at_k": None},
    ]
    record_results(store, rows, run_id="run-a", step=1, checkpoint_id="sft_proof-1", split_kind="benchmark")
    (row,) = leaderboard_rows(store)
    assert (row["solved"], row["total"], row["k"], row["samples_per_statement"]) == (2, 4, 4, 8)
    assert row["pass_at_k"] == 0.5 and row["tokens"] == 4500.0 and row["untried"] == 1
    line = row["line"]
    for part in (
        "putnam [",
        "2/4 solved",
        "pass@4 50.0%",
        "8 samples per statement",
        "4.5k tokens",
        "elaborator-checked",
        "Lean v4.27.0",
        "Mathlib v4.27.0",
        "checkpoint sft_proof-1",
        "run run-a",
        "1 not tried",
    ):
        assert part in line, (part, line)
    assert card_section(store, "run-a")[2] == f"- {line}"
    r = invoke("leaderboard", "--home", store.root.parent)
    assert r.exit_code == 0 and r.output.strip() == line


def test_replay_is_named_a_lower_bound_not_a_verdict_level(store):
    fp = set_meta(store, "putnam")["benchmark_fingerprint"]
    record_results(
        store, [result("p0", fp, 1, checker="replay")], run_id="r1", step=0, checkpoint_id="c", split_kind="benchmark"
    )
    assert "replay (traced proofs, no Lean: a lower bound)" in leaderboard_rows(store, run_id="r1")[0]["line"]


def test_publish_proofs_false_no_proof_text_leaves_the_store(store, tmp_path):
    import datasets

    ids = {r["name"]: r["statement_id"] for r in statements(store)}
    rows = [
        {
            "statement_id": ids["p0"],
            "toolchain": "v4.27.0",
            "proof": "by omega",
            "checker": "kimina",
            "verdict": "proved",
            "verdict_level": "kernel-replayed",
            "origin": "search",
            "model": "tiny",
            "round": 1,
            "set_name": "putnam",
            "name": "p0",
        },
        {
            "statement_id": ids["t0"],
            "toolchain": "v4.15.0",
            "proof": "by norm_num",
            "checker": "kimina",
            "verdict": "proved",
            "origin": "claimed",
            "set_name": "train",
            "name": "t0",
        },
    ]
    assert record_verified_proofs(store, rows) == 2
    r = invoke("export-proofs", tmp_path / "out", "--home", store.root.parent)
    assert r.exit_code == 0, r.output
    assert "wrote 1 verified proofs" in r.output and "withheld 1 proofs" in r.output
    readme = (tmp_path / "out" / "README.md").read_text()
    assert "1 more proofs are of sets marked `publish_proofs: false`" in readme
    everything = "".join(p.read_bytes().decode("latin-1") for p in (tmp_path / "out").rglob("*") if p.is_file())
    assert "by omega" not in everything
    ds = datasets.load_dataset(str(tmp_path / "out"), split="train", cache_dir=str(tmp_path / "hf-cache"))
    assert ds.num_rows == 1
    (got,) = ds.to_list()
    assert (got["statement_id"], got["statement"], got["proof"], got["verdict_level"], got["toolchain"]) == (
        ids["t0"],
        "theorem t0 : (1 : ℕ) + 1 = 2 :=",
        "by norm_num",
        "elaborator-checked",
        "v4.15.0",
    )
    assert set(ds.column_names) >= {
        "statement_id",
        "statement",
        "proof",
        "verdict_level",
        "toolchain",
        "checker",
        "model",
        "round",
    }
    # The report's proofs section keeps the row of a benchmark's proof, never its text.
    assert unpublished(store)["groups"] == {"benchmark:putnam"}
    shown = _published(
        store, [{"repo_id": "benchmark:putnam", "tactics": ["omega"]}, {"repo_id": "r", "tactics": ["simp"]}]
    )
    assert [s["tactics"] for s in shown] == [["(withheld: publish_proofs is false)"], ["simp"]]


def test_export_into_a_folder_that_holds_files_is_refused(store, tmp_path):
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    r = invoke("export-proofs", tmp_path / "full", "--home", store.root.parent)
    assert r.exit_code == 2 and "is not an empty folder" in r.output


def test_an_evaluation_records_its_results_as_a_leaderboard_line(store):
    from tasks.leaderboard import record_benchmark_results

    results = [
        {
            "name": "p0",
            "n": 4,
            "c": 1,
            "k": 4,
            "pass_at_1": 0.25,
            "pass_at_k": 1.0,
            "checker": "kimina",
            "tokens": 100.0,
        },
        {"name": "p1", "n": 4, "c": 0, "k": 4, "pass_at_1": 0.0, "pass_at_k": 0.0, "checker": "kimina"},
    ]
    assert record_benchmark_results(store, "putnam", results, run_id="r2", step=0, checkpoint_id="ck") == 4
    (row,) = leaderboard_rows(store, run_id="r2")
    assert (row["solved"], row["total"], row["untried"]) == (1, 4, 2)
    assert "1/4 solved, pass@4 25.0%" in row["line"]
    with pytest.raises(Exception, match="is not a benchmark set"):
        record_benchmark_results(store, "train", results, run_id="r2", step=0, checkpoint_id="ck")


def test_expert_iteration_proofs_are_exported_unless_an_unpublished_benchmark_states_them(store, tmp_path):
    import datasets

    from storage.found_proofs import record_found
    from storage.leandojo import read_exports
    from storage.splits import SplitSettings
    from storage.synthetic import write_synthetic_export

    store.ingest(read_exports([write_synthetic_export(tmp_path / "alpha", "alpha", 6, 2, seed=1)], SplitSettings()))
    theorems = {t["full_name"]: t for t in store.read_table("theorems").to_pylist()}
    rows = [
        {
            "theorem_id": theorems[n]["theorem_id"],
            "toolchain": "v4.20.0",
            "repo_id": theorems[n]["repo_id"],
            "url": "u",
            "file_path": theorems[n]["file_path"],
            "full_name": n,
            "split": "train",
            "statement_hash": "h",
            "run_id": "r",
            "step": 0,
            "round": 1,
            "checkpoint_id": "c",
            "checker": "kimina",
            "rule_version": "v",
            "verdict": "proved",
            "tactics": ["omega"],
            "proof": "omega",
            "steps": None,
            "axioms": [],
            "expansions": 1,
            "carried_from": None,
        }
        for n in ("Alpha.thm0", "Alpha.thm1")
    ]
    assert record_found(store, rows) == 2
    secret = tmp_path / "secret.jsonl"
    secret.write_text(
        json.dumps({"statement": "theorem other (a b : Nat) (h : a ≤ b + 1) : a ≤ b + 1 := by sorry"}) + "\n"
    )
    import_set(store, StatementSetConfig(path=str(secret), preset="table", benchmark=True, publish_proofs=False))
    r = invoke("export-proofs", tmp_path / "out", "--home", store.root.parent)
    assert r.exit_code == 0, r.output
    assert "wrote 1 verified proofs" in r.output and "withheld 1 proofs" in r.output
    (got,) = datasets.load_dataset(str(tmp_path / "out"), split="train", cache_dir=str(tmp_path / "hf-cache")).to_list()
    assert (got["name"], got["origin"], got["round"], got["proof"]) == ("Alpha.thm0", "expert_iteration", 1, "omega")
