"""The catalog's verification cache table (storage/verification_cache.py) under concurrent
writers and readers: processes and threads of one process, the same key. The wrapper that uses
it is tested in tests/tasks/test_lean_verified.py.

    PYTHONPATH=$PWD .venv/bin/python -m pytest tests/storage/test_verification_cache.py -q
"""

from __future__ import annotations

import multiprocessing
import threading

from storage import verification_cache
from storage.store import Store


def _remember_many(home: str, n: int) -> None:
    store = Store.open(home)
    key = verification_cache.CacheKey("v4.20.0", "h", "theorem t : True", "trivial", "r", "repl")
    for i in range(n):
        answer = verification_cache.CachedAnswer("repl", "proved", True, (), (), {"i": i})
        verification_cache.remember(store, key, answer)
        assert verification_cache.lookup(store, key) is not None


def test_concurrent_writers_of_one_key_leave_one_readable_row(tmp_path):
    home = tmp_path / "home"
    Store.open(home)
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_remember_many, args=(str(home), 8)) for _ in range(2)]
    threads = [threading.Thread(target=_remember_many, args=(str(home), 8)) for _ in range(2)]
    for w in procs + threads:
        w.start()
    for w in procs + threads:
        w.join(timeout=300)
    assert [p.exitcode for p in procs] == [0, 0]
    store = Store.open(home)
    assert verification_cache.count(store) == 1
    key = verification_cache.CacheKey("v4.20.0", "h", "theorem t : True", "trivial", "r", "repl")
    assert verification_cache.lookup(store, key).answer["i"] == 7


def test_threads_of_one_process_read_the_catalog_together(tmp_path):
    """DuckDB shares one database instance between a process's connections to a file, and the
    lock-down is set on the instance: a second reader's `SET allowed_directories` used to fail
    while another thread held a connection (GRPO's reward threads, the benchmark's workers)."""
    store = Store.open(tmp_path / "home")
    key = verification_cache.CacheKey("v4.20.0", "h", "theorem t : True", "trivial", "r", "repl")
    verification_cache.remember(store, key, verification_cache.CachedAnswer("repl", "proved", True, (), (), {}))
    failures = []

    def read():
        try:
            for _ in range(20):
                assert verification_cache.lookup(store, key) is not None
        except Exception as e:  # noqa: BLE001  (collected for the assertion below)
            failures.append(e)

    threads = [threading.Thread(target=read) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


def test_a_sync_writes_every_pending_answer_and_the_last_of_a_key_wins(tmp_path, monkeypatch):
    """`sync` writes its pending answers a few rows per statement (storage/catalog.py
    insert_or_replace), where one statement may not write a key twice: a key pending twice keeps
    its last answer, as writing row by row did; every other row is stored and read back."""
    from storage import catalog

    monkeypatch.setattr(catalog, "ROWS_PER_INSERT", 2)  # 5 keys: 3 statements
    store = Store.open(tmp_path / "home")
    keys = [
        verification_cache.CacheKey("v4.20.0", "h", f"theorem t{i} : True", "trivial", "r", "repl") for i in range(5)
    ]
    answer = lambda i: verification_cache.CachedAnswer("repl", "proved", True, ("m",), ("propext",), {"i": i})  # noqa: E731
    # keys[0] twice in the first statement's rows
    pending = [(keys[0], answer(0)), (keys[0], answer(-1))] + [(k, answer(i)) for i, k in enumerate(keys[1:], 1)]
    read, _ = verification_cache.sync(store, pending, "r", "repl")
    assert verification_cache.count(store) == 5
    assert read == {k.digest: {"i": -1 if i == 0 else i} for i, k in enumerate(keys)}
    assert verification_cache.lookup(store, keys[4]) == answer(4)
