"""The `dojoflow` command line: import, export, repos, sql, errors."""

import json

from typer.testing import CliRunner

from flows.cli import app
from storage.sample import sample_export_dirs
from storage.synthetic import write_synthetic_export

runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False, env={"COLUMNS": "200"})


def test_import_repos_sql_and_export_of_the_sample(tmp_path):
    home = tmp_path / "home"
    for d in sample_export_dirs():
        r = invoke("import", d, "--home", home)
        assert r.exit_code == 0, r.output
        assert "added" in r.output
    again = invoke("import", sample_export_dirs()[0], "--home", home)
    assert "unchanged" in again.output

    repos = invoke("repos", "--home", home)
    assert repos.exit_code == 0
    lines = [
        line
        for line in repos.output.splitlines()
        if "NatBasics" in line or "ListLemmas" in line or "LogicPuzzles" in line
    ]
    assert [n for line in lines for n in ("NatBasics", "ListLemmas", "LogicPuzzles") if n in line] == [
        "NatBasics",
        "ListLemmas",
        "LogicPuzzles",
    ]  # curriculum order, easiest first

    sql = invoke("sql", "SELECT count(*) AS n FROM theorems", "--home", home)
    assert sql.exit_code == 0 and "228" in sql.output

    out = tmp_path / "out"
    exp = invoke("export", out, "--repo", "https://dojoflow.invalid/samples/NatBasics", "--home", home)
    assert exp.exit_code == 0, exp.output
    meta = json.loads((out / "metadata.json").read_text())
    # one repository from one export: the source export's own fields are kept (issue 7)
    assert [(r["url"], r["commit"]) for r in meta["repositories"]] == [
        ("https://dojoflow.invalid/samples/NatBasics", meta["from_repo"]["commit"])
    ]
    assert meta["repositories"][0]["from_repo"] == meta["from_repo"]

    # `--repo` takes a repository's name too (storage/repo_specs.py), and export's help says so
    by_name = invoke("export", tmp_path / "by-name", "--repo", "ListLemmas", "--home", home)
    assert by_name.exit_code == 0, by_name.output
    meta = json.loads((tmp_path / "by-name" / "metadata.json").read_text())
    assert [r["url"] for r in meta["repositories"]] == ["https://dojoflow.invalid/samples/ListLemmas"]
    assert "Repository name" in invoke("export", "--help").output


def test_sql_refuses_writes_and_explains_bad_queries(tmp_path):
    home = tmp_path / "home"
    invoke("import", write_synthetic_export(tmp_path / "e", "q", 4, 2), "--home", home)
    r = invoke("sql", "DELETE FROM metrics", "--home", home)
    assert r.exit_code == 2 and "read-only SELECT" in r.output
    r = invoke("sql", "COPY (SELECT 1) TO '/tmp/x.csv'", "--home", home)
    assert r.exit_code == 2 and "COPY" in r.output
    r = invoke("sql", "SELECT nope FROM theorems", "--home", home)
    assert r.exit_code == 2 and "nope" in r.output


def test_errors_are_one_clear_line_and_exit_two(tmp_path):
    r = invoke("import", tmp_path / "missing", "--home", tmp_path / "home")
    assert r.exit_code == 2 and "does not exist" in r.output
    r = invoke("repos", "--home", tmp_path / "empty")
    assert r.exit_code == 2 and "no Dojoflow store" in r.output
    assert not (tmp_path / "home").exists()  # a failed import creates no store
    invoke("import", write_synthetic_export(tmp_path / "e", "q", 4, 2), "--home", tmp_path / "home")
    r = invoke("export", tmp_path / "o", "--repo", "https://nowhere/x", "--home", tmp_path / "home")
    assert r.exit_code == 2 and "matches no repository" in r.output
    r = invoke("run", tmp_path / "nope.yaml")
    assert r.exit_code == 2 and "nope.yaml: does not exist" in r.output


def test_samples_writes_each_sample_as_a_traceable_git_repository_with_the_same_commit_everywhere(tmp_path):
    from tasks.tracing.checkout import check_lake_project_at, parse_source, resolve_local_commit

    r = invoke("samples", tmp_path / "a")
    assert r.exit_code == 0, r.output
    again = invoke("samples", tmp_path / "b")
    commits = []
    for name in ("ListLemmas", "LogicPuzzles", "NatBasics"):
        source = parse_source(str(tmp_path / "a" / name))  # a repository root, as tracing requires
        commit = resolve_local_commit(source, None)
        check_lake_project_at(source, tmp_path / "a" / name, commit)
        assert (tmp_path / "a" / name / f"{name}.lean").exists()
        commits.append(commit)
        assert resolve_local_commit(parse_source(str(tmp_path / "b" / name)), None) == commit
    assert again.exit_code == 0 and len(set(commits)) == 3
    assert invoke("samples", tmp_path / "a").exit_code == 2  # never overwrites


def test_version_prints_the_installed_version():
    import tomllib
    from pathlib import Path

    expected = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())["project"]["version"]
    r = CliRunner().invoke(app, ["--version"])
    assert r.exit_code == 0 and r.output == f"dojoflow {expected}\n", r.output


def test_config_schema_lists_every_field_with_its_meaning_and_config_errors_point_to_it(tmp_path):
    """Config errors pointed to `dojoflow run --help`, which shows none of the fields (issue 26)."""
    r = CliRunner().invoke(app, ["config", "--schema"])
    assert r.exit_code == 0, r.output
    schema = json.loads(r.output)
    assert {"sources", "trainers", "evaluation", "benchmarks"} <= set(schema["properties"])
    assert all(field.get("description") for field in schema["properties"].values())
    bad = tmp_path / "bad.yaml"
    bad.write_text("sources: [{sample: NatBasics}]\ntrainerz: {}\n")
    r = CliRunner().invoke(app, ["run", str(bad), "--home", str(tmp_path / "home")])
    assert r.exit_code == 2 and "`trainerz` is not a known field" in r.output and "dojoflow config --schema" in r.output
    shown = CliRunner().invoke(app, ["config"])  # the sample config whole, defaults included, as loadable YAML
    (tmp_path / "shown.yaml").write_text(shown.output)
    r = CliRunner().invoke(app, ["config", str(tmp_path / "shown.yaml")])
    assert r.exit_code == 0 and r.output == shown.output, r.output
