"""`catalog.reading`: back-to-back reads share one read-only connection (one open, lock-down and
views check for all of them), and nothing else changes: the views stay fresh, a damaged file is
still named, a write inside is refused at once, another thread never uses the batch's connection,
and the catalog's lock is free for a writer as soon as the batch ends."""

from __future__ import annotations

import contextvars
import threading

import pytest

from storage import catalog, metrics
from storage.errors import DamagedStoreError
from storage.leandojo import import_export
from storage.synthetic import write_synthetic_export


def _opened(monkeypatch) -> list:
    """Every DuckDB connection the catalog opens from now on (the real ones, counted)."""
    import duckdb

    opened, real = [], duckdb.connect
    monkeypatch.setattr(duckdb, "connect", lambda *a, **k: opened.append(a[0]) or real(*a, **k))
    return opened


def test_reads_in_a_batch_share_one_connection_and_give_the_same_answers(store, tmp_path, monkeypatch):
    import_export(store, write_synthetic_export(tmp_path / "e", "alpha", 6, 2))
    metrics.record(store, [_metric()], "run-1", 0, "alpha")
    alone = metrics.of_run(store, "run-1"), catalog.query(store, "SELECT count(*) AS n FROM theorems").to_pylist()
    opened = _opened(monkeypatch)
    with catalog.reading(store):
        with catalog.connect(store) as a, catalog.connect(store) as b:
            assert a is b
        batched = metrics.of_run(store, "run-1"), catalog.query(store, "SELECT count(*) AS n FROM theorems").to_pylist()
        assert catalog.has_table(store, "metrics") and catalog.rows_of(store, "runs", "run_id", None, "run_id") == []
    assert batched == alone and alone[1] == [{"n": 6}]
    assert opened == [str(store.catalog_path)]  # of_run alone checks its columns and reads: one open in all
    with catalog.connect(store, write=True) as con:  # the batch's reader has let go of the lock
        con.execute("INSERT INTO meta VALUES ('after', 'batch')")
    assert len(opened) == 2


def test_a_batch_sees_repositories_added_since_the_catalog_views_were_built(store, tmp_path):
    import_export(store, write_synthetic_export(tmp_path / "a", "alpha", 3, 2))
    with catalog.connect(store, write=True) as con:  # the stored views as a killed writer left them
        con.execute("UPDATE meta SET value = 'stale' WHERE key = 'views_key'")
    with catalog.reading(store):
        assert catalog.query(store, "SELECT count(*) AS n FROM theorems").to_pylist() == [{"n": 3}]


def test_a_write_inside_a_batch_is_refused_at_once(store):
    with catalog.reading(store):
        with pytest.raises(RuntimeError, match="inside a catalog.reading batch"):
            with catalog.connect(store, write=True, timeout=600):
                pass
        assert catalog.query(store, "SELECT 1 AS one").to_pylist() == [{"one": 1}]  # the batch goes on


def test_another_thread_never_uses_the_batch_connection(store):
    seen = {}
    with catalog.reading(store):
        mine = catalog._batch(store)
        context = contextvars.copy_context()  # as a task runner hands a thread the caller's context
        worker = threading.Thread(target=lambda: seen.update(batch=context.run(catalog._batch, store)))
        worker.start()
        worker.join()
    assert mine is not None and seen == {"batch": None}
    assert catalog._batch(store) is None


def test_a_damaged_data_file_read_in_a_batch_is_still_named(store, tmp_path):
    import_export(store, write_synthetic_export(tmp_path / "e", "alpha", 3, 2))
    damaged = next(store.data_dir.rglob("theorems.parquet"))
    damaged.write_bytes(b"not parquet at all" * 10)
    with pytest.raises(DamagedStoreError) as raised:
        with catalog.reading(store):
            catalog.query(store, "SELECT * FROM theorems")
    assert str(damaged) in str(raised.value)


def _metric() -> dict:
    return {
        "repo_id": "alpha",
        "trainer": "sft",
        "split_kind": "repo",
        "split": "test",
        "metric": "top1_accuracy",
        "value": 0.5,
        "count": 4,
        "checkpoint_id": "c1",
    }


def test_a_reader_of_a_catalog_not_yet_ensured_builds_its_own_views(store, tmp_path):
    """Another process has created the catalog file but not yet its tables (two runs on a fresh home at once)."""
    import duckdb

    import_export(store, write_synthetic_export(tmp_path / "e", "alpha", 4, 2))
    store.catalog_path.unlink()
    duckdb.connect(str(store.catalog_path)).close()  # a file with no `meta` table
    assert catalog.query(store, "SELECT count(*) AS n FROM theorems").to_pylist() == [{"n": 4}]
    with catalog.reading(store):
        assert catalog.query(store, "SELECT count(*) AS n FROM theorems").to_pylist() == [{"n": 4}]
        assert not catalog.has_table(store, "meta")  # a reader writes nothing
