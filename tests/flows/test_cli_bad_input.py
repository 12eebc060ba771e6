"""Bad input on the command line: one line naming the input and the fix, exit code 2,
and the store as it was (docs/bad-input.md lists these cases)."""

import hashlib
import shutil

import pytest

from storage.proofs import record_proofs
from storage.store import Store
from storage.synthetic import write_synthetic_export

from .cli_store import RUN_ID, invoke, store_with_a_run


def tree_digest(root) -> dict:
    """Every file under `root` and the hash of its bytes (locks excluded: they are rewritten by design)."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.name.endswith("lock")
    }


@pytest.fixture(scope="module")
def read_only_home(tmp_path_factory):
    """One store with a run for the tests that only read it (each test that damages a store copies it)."""
    home = store_with_a_run(tmp_path_factory.mktemp("read-only"))
    before = tree_digest(home / "store")
    yield home
    assert tree_digest(home / "store") == before  # no test wrote to it


def own_store_with_a_run(read_only_home, tmp_path):
    """A copy of `read_only_home`'s store with a run (and the exports it was imported from) in
    `tmp_path`, for a test that damages it: built once, copied (1.3 s of CPU each, built)."""
    shutil.copytree(read_only_home.parent, tmp_path, dirs_exist_ok=True)
    return tmp_path / "home"


def one_line_error(r) -> str:
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output and r.output.startswith("error: "), r.output
    return r.output


@pytest.mark.parametrize(
    "command", [["repos"], ["runs"], ["sql", "SELECT 1"], ["migrate"], ["repair"], ["import", "EXPORT"], ["run"]]
)
def test_a_home_that_is_a_file_is_refused(tmp_path, command):
    afile = tmp_path / "hostname"
    afile.write_text("not a folder\n")
    args = [str(write_synthetic_export(tmp_path / "e", "q", 4, 2)) if a == "EXPORT" else a for a in command]
    out = one_line_error(invoke(*args, "--home", afile))
    assert f"{afile}: is a file, not a folder" in out and "give --home" in out
    assert afile.read_text() == "not a folder\n"


def test_a_home_under_a_file_is_refused(tmp_path):
    afile = tmp_path / "hostname"
    afile.write_text("x")
    out = one_line_error(invoke("import", write_synthetic_export(tmp_path / "e", "q", 4, 2), "--home", afile / "h"))
    assert f"{afile / 'h'}: is inside {afile}, which is a file" in out


@pytest.mark.parametrize("name", ["seed\n", "se\x00ed", "../seed", ""])
def test_import_progress_refuses_names_with_newline_nul_or_path(tmp_path, name):
    jsonl = tmp_path / "p.jsonl"
    jsonl.write_text('{"goal": "g", "prefix": "", "tactic": "simp", "steps_remaining": 1}\n')
    out = one_line_error(invoke("import-progress", jsonl, "--name", name, "--home", tmp_path / "home"))
    assert "--name" in out and "is not a valid progress dataset name" in out
    assert not (tmp_path / "home").exists()


@pytest.mark.parametrize(
    "option, value", [("--val-fraction", "1.5"), ("--test-fraction", "-0.1"), ("--val-fraction", "0.6")]
)
def test_a_bad_split_fraction_names_the_option(tmp_path, option, value):
    args = [option, value] + (["--test-fraction", "0.6"] if value == "0.6" else [])
    out = one_line_error(
        invoke("import", write_synthetic_export(tmp_path / "e", "q", 4, 2), *args, "--home", tmp_path / "home")
    )
    assert f"{option} {value}" in out and "validation error" not in out and "pydantic" not in out
    assert not (tmp_path / "home").exists()


def test_a_truncated_parquet_file_names_the_file_and_repair(tmp_path, read_only_home):
    home = own_store_with_a_run(read_only_home, tmp_path)
    [theorems] = [p for p in (home / "store" / "data").glob("beta*/theorems.parquet")]
    theorems.write_bytes(theorems.read_bytes()[:100])
    before = tree_digest(home / "store")
    for command in (["repos"], ["sql", "SELECT count(*) FROM theorems"]):
        out = one_line_error(invoke(*command, "--home", home))
        assert f"{theorems} is damaged" in out and f"dojoflow repair --home {home}" in out, out
    assert tree_digest(home / "store") == before

    r = invoke("repair", "--home", home)
    assert r.exit_code == 0, r.output
    assert "removed repository" in r.output and "theorems.parquet" in r.output and "import it again" in r.output
    assert "kept metrics: 12 rows" in r.output and "kept runs: 1 rows" in r.output
    r = invoke("repos", "--home", home)
    assert r.exit_code == 0 and "alpha" in r.output and "beta" not in r.output, r.output
    r = invoke("import", tmp_path / "export-beta", "--home", home)
    assert r.exit_code == 0 and "added" in r.output, r.output


def test_a_corrupt_catalog_points_to_repair_which_rebuilds_it(tmp_path, read_only_home):
    home = own_store_with_a_run(read_only_home, tmp_path)
    cat = home / "store" / "catalog.duckdb"
    cat.write_bytes(b"\0garbage" * 2000)
    before = tree_digest(home / "store")
    for command in (["sql", "SELECT count(*) FROM theorems"], ["repos"], ["runs"]):
        out = one_line_error(invoke(*command, "--home", home))
        assert f"{cat} is damaged" in out and "dojoflow repair" in out and "check the SQL" not in out, out
    assert tree_digest(home / "store") == before

    r = invoke("repair", "--home", home)
    assert r.exit_code == 0, r.output
    assert "lost metrics: the catalog cannot be opened" in r.output and "previous catalog was moved to" in r.output
    r = invoke("sql", "SELECT count(*) AS n FROM theorems", "--home", home)
    assert r.exit_code == 0 and r.stdout.split() == ["n", "8"], r.output


def test_repair_of_a_readable_catalog_keeps_every_record(tmp_path, read_only_home):
    home = own_store_with_a_run(read_only_home, tmp_path)
    proof = {"run_id": RUN_ID, "checkpoint_id": "c", "repo_id": "r", "file_path": "A.lean", "split": "test"}
    proof.update(purpose="sorry", tactics=["simp"], proof="by simp", checker="replay", axioms=[])
    record_proofs(Store.open(home), [{**proof, "theorem_id": f"t{i}", "full_name": f"t{i}"} for i in range(23)])
    query = (
        "SELECT (SELECT count(*) FROM metrics) m, (SELECT count(*) FROM runs) r, (SELECT count(*) FROM checkpoints) c, "
        "(SELECT count(*) FROM proofs) p"
    )
    before = invoke("sql", query, "--home", home).stdout
    r = invoke("repair", "--home", home)
    assert r.exit_code == 0 and "lost" not in r.output and "removed" not in r.output, r.output
    assert "kept proofs: 23 rows" in r.output
    assert "damaged" not in r.output and "catalog.duckdb.before-repair-" in r.output, r.output  # it was healthy
    assert invoke("sql", query, "--home", home).stdout == before == "m,r,c,p\n12,1,4,23\n"
    assert RUN_ID in invoke("runs", "--home", home).output


def test_metrics_checks_its_arguments_before_the_stores_state(tmp_path):
    r = invoke("import", write_synthetic_export(tmp_path / "e", "q", 4, 2), "--home", tmp_path / "home")
    assert r.exit_code == 0, r.output  # a store with no runs yet
    out = one_line_error(invoke("metrics", "--split", "tset", "--home", tmp_path / "home"))
    assert "tset, --split: is not a split. use one of: train, val, test" in out


def test_usage_errors_exit_two(tmp_path):
    r = invoke("repos", "--no-such-option")
    assert r.exit_code == 2 and "No such option" in r.output
    r = invoke("repos", "--format", "yaml", "--home", tmp_path)
    assert r.exit_code == 2 and "yaml" in r.output


@pytest.mark.timeout(600)  # a hang guard: without a limit the query below runs for hours
def test_a_runaway_query_is_interrupted_at_its_time_limit_and_named(read_only_home):
    home = read_only_home
    runaway = "SELECT count(*) FROM range(100000000) a, range(100000000) b WHERE a.range + b.range = 7"
    out = one_line_error(invoke("sql", runaway, "--time-limit", "1", "--home", home))
    assert "query: ran longer than the time limit (1 s) and was interrupted" in out and "--time-limit" in out
    r = invoke("sql", "SELECT count(*) AS n FROM runs", "--home", home)  # the catalog is free again
    assert r.exit_code == 0 and r.stdout.split() == ["n", "1"], r.output
    for bad in ("0", "-1", "nan", "inf"):
        out = one_line_error(invoke("sql", "SELECT 1", "--time-limit", bad, "--home", home))
        assert f"--time-limit {float(bad)}: must be a positive number of seconds" in out


def test_card_of_an_unknown_run_names_the_positional_argument_not_an_option(read_only_home):
    home = read_only_home
    out = one_line_error(invoke("card", "nosuchrun", "--home", home))
    assert out.startswith("error: nosuchrun, RUN: matches no run") and "--run" not in out
    assert len(out.strip().splitlines()) == 1
    out = one_line_error(invoke("card", RUN_ID, "--against", "nosuchrun", "--home", home))
    assert "nosuchrun, --against: matches no run" in out


def test_a_launch_with_more_processes_than_the_machine_has_is_refused_before_any_work(tmp_path):
    import os

    config = tmp_path / "c.yaml"
    config.write_text("launch: {processes: 4096}\ntrainers: {sft: {training: {max_steps: 1}}}\n")
    out = one_line_error(invoke("run", config, "--home", tmp_path / "home"))
    assert "trainers.sft.launch.processes: is 4096 but this machine has" in out and "set trainers.sft" in out
    assert not (tmp_path / "home" / "checkpoints").exists() and os.cpu_count() < 4096


def test_a_time_limit_too_large_for_a_timer_is_refused(read_only_home):
    home = read_only_home
    # 1e300 s once killed the watchdog thread (OverflowError) and the query ran unbounded.
    out = one_line_error(invoke("sql", "SELECT 1", "--time-limit", "1e300", "--home", home))
    assert "--time-limit 1e+300: must be a positive number of seconds, at most 604800 (a week)" in out


@pytest.mark.timeout(600)
def test_a_query_stuck_in_one_call_past_its_time_limit_ends_the_command(read_only_home):
    """DuckDB checks for an interrupt between chunks; one 2 GB repeat() never sees it (issue 26)."""
    import subprocess
    import sys
    from pathlib import Path

    home = read_only_home
    huge = "SELECT length(repeat('x', 2000000000)) AS n"
    root = Path(__file__).resolve().parents[2]
    args = [sys.executable, "-m", "flows.cli", "sql", huge, "--time-limit", "1", "--home", str(home)]
    done = subprocess.run(
        args,
        cwd=root,
        capture_output=True,
        text=True,  # a 1 s grace after the interrupt (5 s by default): still seconds before repeat() returns
        env={"PATH": "/usr/bin:/bin", "COLUMNS": "200", "DOJOFLOW_SQL_STUCK_GRACE_S": "1"},
    )
    assert done.returncode == 2, done.stdout + done.stderr
    out = done.stdout + done.stderr
    assert (
        out.startswith("error: query: ran longer than the time limit (1 s) inside one call") and "Traceback" not in out
    )
    assert "2000000000" not in done.stdout  # it ended before the result
    r = invoke("sql", "SELECT count(*) AS n FROM runs", "--home", home)  # the catalog is free again
    assert r.exit_code == 0 and r.stdout.split() == ["n", "1"], r.output


def test_a_trace_that_is_refused_leaves_no_store_behind(tmp_path, monkeypatch):
    """`dojoflow trace` without Lean (or of a bad path) refused correctly but created the store first (issue 26)."""
    from storage.sample import write_sample_repositories

    repo = next(iter(write_sample_repositories(tmp_path / "samples")))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # no lake, no elan: no Lean toolchain
    for target in (tmp_path / "no-such-repo", repo):
        out = one_line_error(invoke("trace", target, "--home", tmp_path / "home"))
        assert str(target) in out or "Lean" in out or "lake" in out, out
        assert not (tmp_path / "home" / "store").exists(), out


def test_card_refuses_an_empty_run_the_same_run_twice_and_a_reports_file(tmp_path, read_only_home):
    """`card ''` matched every run (so the only one), `card RUN --against RUN` compared a run with
    itself, and `card` with reports/ a file ended in a traceback (issue 26)."""
    home = own_store_with_a_run(read_only_home, tmp_path)
    out = one_line_error(invoke("card", "", "--home", home))
    assert out.startswith("error: '', RUN: is empty") and "dojoflow runs" in out
    out = one_line_error(invoke("card", RUN_ID, "--against", RUN_ID[:8], "--home", home))
    assert f"{RUN_ID[:8]}, --against: is run {RUN_ID}, the card's own run" in out
    (home / "reports").write_text("a file where the reports folder goes\n")
    out = one_line_error(invoke("card", RUN_ID, "--home", home))
    assert "which is a file" in out and "move that file away" in out
    assert (home / "reports").read_text() == "a file where the reports folder goes\n"


def test_a_repository_name_holding_a_newline_is_quoted_in_a_one_line_error(tmp_path, read_only_home):
    home = read_only_home
    out = one_line_error(invoke("export", tmp_path / "out", "--repo", "alpha\nbeta", "--home", home))
    assert out.startswith("error: 'alpha\\nbeta': matches no repository") and out.count("\n") == 1, out
