"""`dojoflow sql` reads the catalog and the store's own files, and nothing else."""

import pytest
from typer.testing import CliRunner

from flows.cli import app
from storage import catalog
from storage.store import Store
from storage.synthetic import write_synthetic_export

runner = CliRunner()


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A store with one repository, and a HOME of its own where DuckDB would put extensions."""
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    (tmp_path / "user").mkdir()
    home = tmp_path / "home"
    r = runner.invoke(app, ["import", str(write_synthetic_export(tmp_path / "e", "q", 4, 2)), "--home", str(home)])
    assert r.exit_code == 0, r.output
    return home


def sql(home, query):
    return runner.invoke(app, ["sql", query, "--home", str(home)], catch_exceptions=False, env={"COLUMNS": "200"})


@pytest.mark.parametrize(
    "query",
    [
        "SELECT * FROM read_text('/etc/hostname')",
        "SELECT * FROM read_csv('/etc/passwd')",
        "SELECT * FROM glob('/root/*')",
        "SELECT * FROM read_blob('/etc/hostname')",
        "SELECT * FROM read_text('{store}/../prefect/x.txt')",
        "SELECT * FROM read_parquet('{store}/../outside.parquet')",
        "SELECT * FROM read_csv('http://127.0.0.1:9/x.csv')",
    ],
)
def test_sql_cannot_read_outside_the_store_or_install_extensions(home, tmp_path, query):
    (home / "outside.parquet").write_bytes(b"PAR1")
    r = sql(home, query.format(store=home / "store"))
    assert r.exit_code == 2, r.output
    assert "file system operations are disabled" in r.output and "only the store's own files" in r.output
    assert not (tmp_path / "user" / ".duckdb").exists()  # httpfs was not installed


@pytest.mark.parametrize(
    "query",
    [
        "SET enable_external_access = true",
        "SET lock_configuration = false",
        "RESET enable_external_access",
        "INSTALL httpfs",
        "LOAD httpfs",
    ],
)
def test_sql_refuses_statements_that_could_turn_the_lock_off(home, tmp_path, query):
    """The CLI's SELECT-only check; the lock below it: test_a_query_cannot_unlock_its_own_connection."""
    r = sql(home, query)
    assert r.exit_code == 2, r.output
    assert "read-only SELECT" in r.output, r.output
    assert not (tmp_path / "user" / ".duckdb").exists()


def test_a_query_cannot_unlock_its_own_connection(home):
    """Below the CLI's SELECT-only check: the connection itself refuses."""
    import duckdb

    store = Store.open(home, create=False)
    with catalog.connect(store) as con:
        with pytest.raises(duckdb.InvalidInputException, match="locked"):
            con.execute("SET enable_external_access = true")
        with pytest.raises(duckdb.PermissionException):
            con.sql("SELECT * FROM read_text('/etc/hostname')").fetchall()


def test_the_catalog_views_and_snapshots_still_work_under_the_lock(home):
    from storage.snapshot import build_snapshot

    store = Store.open(home, create=False)
    ref = build_snapshot(store, store.repo_ids())  # reads Parquet through a locked-down connection too
    assert ref.theorems("random", "train").num_rows > 0
    r = sql(home, "SELECT snapshot_id FROM snapshots")
    assert r.exit_code == 0 and ref.snapshot_id in r.output, r.output
    for view in (
        "repositories",
        "files",
        "theorems",
        "tactics",
        "premises",
        "metrics",
        "runs",
        "checkpoints",
        "snapshots",
    ):
        r = sql(home, f"SELECT count(*) AS n FROM {view}")
        assert r.exit_code == 0, (view, r.output)
    r = sql(home, "SELECT count(*) AS n FROM read_parquet('" + str(home / "store" / "data") + "/*/theorems.parquet')")
    assert r.exit_code == 0 and r.stdout.split() == ["n", "4"], r.output  # the store's own files stay readable
