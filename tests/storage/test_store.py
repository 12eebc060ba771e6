"""The store's writer lock, orphan clean-up, catalog views and DOJOFLOW_HOME."""

import multiprocessing

import pytest

from storage import catalog
from storage.atomic import TMP_MARK, write_json
from storage.errors import StoreLockedError
from storage.leandojo import import_export
from storage.lock import file_lock
from storage.store import Store, dojoflow_home
from storage.synthetic import write_synthetic_export


def _hold_lock(root, ready, release):
    with Store(root).writer():
        ready.set()
        release.wait(20)


def test_a_second_writer_gets_a_clear_error_while_the_first_holds_the_lock(store, tmp_path):
    ctx = multiprocessing.get_context("spawn")
    ready, release = ctx.Event(), ctx.Event()
    p = ctx.Process(target=_hold_lock, args=(store.root, ready, release))
    p.start()
    try:
        assert ready.wait(30)
        e = write_synthetic_export(tmp_path / "e", "locked", 5, 2)
        with pytest.raises(StoreLockedError, match=r"locked by another writer \(pid \d+"):
            import_export(store, e)
        assert store.repo_ids() == []
    finally:
        release.set()
        p.join(30)
    assert import_export(store, e)[0].status == "added"


def test_a_writer_removes_what_a_killed_writer_left(store):
    orphan = store.data_dir / f"x{TMP_MARK}abc"
    orphan.mkdir(parents=True)
    (orphan / "theorems.parquet").write_text("half")
    assert store.repo_ids() == []  # readers never see it
    with store.writer():
        pass
    assert not orphan.exists()


def test_dojoflow_home_decides_where_the_store_lives(tmp_path, monkeypatch):
    monkeypatch.setenv("DOJOFLOW_HOME", str(tmp_path / "elsewhere"))
    assert dojoflow_home() == (tmp_path / "elsewhere").resolve()
    s = Store.open()
    assert s.root == (tmp_path / "elsewhere" / "store").resolve()
    monkeypatch.delenv("DOJOFLOW_HOME")
    monkeypatch.chdir(tmp_path)
    assert dojoflow_home() == (tmp_path / ".dojoflow").resolve()


def test_catalog_views_follow_the_data_and_record_tables_exist(store, tmp_path):
    assert catalog.query(store, "SELECT count(*) AS n FROM theorems")["n"].to_pylist() == [0]
    import_export(store, write_synthetic_export(tmp_path / "e", "viewed", 7, 2))
    q = "SELECT count(*) AS n FROM theorems t JOIN repositories r USING (repo_id) WHERE r.name = 'viewed'"
    assert catalog.query(store, q)["n"].to_pylist() == [7]
    tables = set(catalog.query(store, "SELECT table_name FROM information_schema.tables")["table_name"].to_pylist())
    assert {"snapshots", "checkpoints", "metrics", "runs"} <= tables


def test_atomic_json_write_leaves_no_temp_file(tmp_path):
    write_json(tmp_path / "a.json", {"x": 1})
    assert [p.name for p in tmp_path.iterdir()] == ["a.json"]


# -- readers share the catalog, writers have it alone -----------------------------------
def test_readers_share_the_lock_and_a_writer_excludes_them(tmp_path):
    path = tmp_path / "catalog.lock"
    with file_lock(path, shared=True), file_lock(path, shared=True):  # two fds, two readers
        with pytest.raises(StoreLockedError, match=r"locked by another writer \(readers are using it\)"):
            with file_lock(path, timeout=0.1):
                pass
    with file_lock(path):
        with pytest.raises(
            StoreLockedError, match=r"being written by another process \(pid \d+.*Run the command again"
        ):
            with file_lock(path, timeout=0.1, shared=True):
                pass
        with pytest.raises(StoreLockedError):
            with file_lock(path, timeout=0):
                pass
    with file_lock(path, shared=True):  # released: both kinds work again
        pass
    with file_lock(path):
        pass


def _read_and_hold(home, ready, release):
    store = Store.open(home, create=False)
    with catalog.connect(store, timeout=10) as con:
        assert con.sql("SELECT count(*) FROM theorems").fetchall() == [(7,)]
        ready.set()
        release.wait(30)


def test_two_processes_read_the_catalog_at_once_and_a_writer_waits_for_them(store, tmp_path):
    import_export(store, write_synthetic_export(tmp_path / "e", "shared", 7, 2))
    ctx = multiprocessing.get_context("spawn")
    ready, release = ctx.Event(), ctx.Event()
    p = ctx.Process(target=_read_and_hold, args=(store.root.parent, ready, release))
    p.start()
    try:
        assert ready.wait(60)
        # a second reader, in this process, while the other holds its read-only DuckDB connection
        with catalog.connect(store, timeout=1) as con:
            assert con.sql("SELECT count(*) FROM theorems").fetchall() == [(7,)]
        with pytest.raises(StoreLockedError, match="readers are using it"):
            with catalog.connect(store, write=True, timeout=0.3):
                pass
    finally:
        release.set()
        p.join(30)
    assert p.exitcode == 0
    with catalog.connect(store, write=True, timeout=1) as con:
        con.execute("INSERT INTO meta VALUES ('written', 'after the readers left')")


def test_every_parquet_file_of_the_store_is_zstd_compressed(store, tmp_path):
    import pyarrow.parquet as pq

    from storage.snapshot import build_snapshot

    import_export(store, write_synthetic_export(tmp_path / "e", "zeta", 30, 3, seed=2))
    build_snapshot(store, store.repo_ids())
    files = sorted(store.root.rglob("*.parquet"))
    assert any("/parts/" in str(f) for f in files) and any("/data/" in str(f) for f in files)
    codecs = {
        str(f.relative_to(store.root)): {
            pq.ParquetFile(f).metadata.row_group(0).column(i).compression
            for i in range(pq.ParquetFile(f).metadata.num_columns)
        }
        for f in files
        if pq.ParquetFile(f).metadata.num_row_groups
    }
    assert codecs and all(c == {"ZSTD"} for c in codecs.values()), codecs


def test_a_table_module_adds_a_view_by_declaring_it_and_readers_follow_its_key(tmp_path):
    """A table module's views are a `catalog.Views` the store lists (storage/catalog.py): the catalog
    builds them with its own, and a reader whose declared key changed builds its own fresh copy."""
    state = {"answer": 42}

    def create(store, con, kind):
        con.execute(f"CREATE OR REPLACE {kind}VIEW answer AS SELECT {state['answer']} AS x")

    class WithAnswer(Store):
        views = (*Store.views, catalog.Views(create=create, key=lambda store: state["answer"]))

    store = WithAnswer.open(tmp_path)
    assert catalog.query(store, "SELECT x FROM answer").to_pylist() == [{"x": 42}]
    state["answer"] = 43  # what the view depends on changed; no writer has rebuilt it
    assert catalog.query(store, "SELECT x FROM answer").to_pylist() == [{"x": 43}]
    assert catalog.query(store, "SELECT count(*) AS n FROM snapshots").to_pylist() == [{"n": 0}]  # the others too


def test_the_views_key_of_a_store_without_sets_is_the_one_it_always_had(store):
    """Declaring the views in their modules keeps the key a catalog written before stores (an
    older reader's views stay valid): the folders, the root, and whether a manifest exists."""
    from storage.ids import stable_hash

    assert catalog.views_key(store, store.folders()) == stable_hash([[], str(store.root), False], 16)
