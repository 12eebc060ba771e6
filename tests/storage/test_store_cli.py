"""The store's commands on the command line: `dojoflow import` and `dojoflow migrate`."""

import json

from typer.testing import CliRunner

from flows.cli import app
from storage import schemas
from storage.synthetic import write_synthetic_export

from .test_migrations import make_v1_store

runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False, env={"COLUMNS": "200"})


def test_import_of_a_bad_path_creates_no_store(tmp_path):
    home = tmp_path / "home"
    r = invoke("import", tmp_path / "missing", "--home", home)
    assert r.exit_code == 2 and "missing: does not exist" in r.output
    bad = write_synthetic_export(tmp_path / "bad", "bad", 4, 2)
    (bad / "random" / "val.json").write_text("[")
    r = invoke("import", bad, "--home", home)
    assert r.exit_code == 2 and "val.json: malformed JSON" in r.output
    assert not home.exists()
    r = invoke("import", write_synthetic_export(tmp_path / "good", "good", 4, 2), "--home", home)
    assert r.exit_code == 0 and "added" in r.output
    assert (home / "store" / "FORMAT_VERSION.json").exists()


def test_migrate_brings_an_old_store_up_and_then_has_nothing_to_do(tmp_path):
    home, _ = make_v1_store(tmp_path)
    r = invoke("repos", "--home", home)
    assert r.exit_code == 2 and "dojoflow migrate" in r.output
    r = invoke("migrate", "--home", home)
    assert r.exit_code == 0, r.output
    assert "1 -> 2" in r.output and f"from format version 1 to {schemas.FORMAT_VERSION}" in r.output
    assert json.loads((home / "store" / "FORMAT_VERSION.json").read_text())["format_version"] == schemas.FORMAT_VERSION
    r = invoke("repos", "--home", home)
    assert r.exit_code == 0 and "old0" in r.output and "old1" in r.output
    r = invoke("migrate", "--home", home)
    assert r.exit_code == 0 and f"already at format version {schemas.FORMAT_VERSION}" in r.output
    r = invoke("migrate", "--home", tmp_path / "nothing")
    assert r.exit_code == 2 and "nothing to migrate" in r.output
    assert not (tmp_path / "nothing").exists()
