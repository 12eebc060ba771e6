"""tasks/lean/closing.py: a backend closed with the process's objects frozen, and unfrozen after;
a heap a caller froze stays frozen."""

from __future__ import annotations

import gc
import threading

import pytest

from tasks.lean.closing import close_quickly


@pytest.fixture(autouse=True)
def unfrozen_heap():
    """Each test starts from a heap nothing froze (the suite freezes one: tests/conftest.py), else
    the freezing it checks would be the suite's, not the close's; the suite's freeze is put back
    after (collected first, so no garbage is frozen)."""
    was_frozen = gc.get_freeze_count() > 0
    gc.unfreeze()
    yield
    if was_frozen:
        gc.collect()
        gc.freeze()


class Closable:
    def __init__(self, error: Exception | None = None, inside=None):
        self.closed, self.error, self.inside, self.frozen_while_closing = False, error, inside, None

    def close(self):
        self.frozen_while_closing = gc.get_freeze_count()
        if self.inside is not None:
            self.inside()
        self.closed = True
        if self.error is not None:
            raise self.error


def test_close_runs_with_the_objects_frozen_and_unfreezes_even_when_close_raises():
    before = gc.get_freeze_count()
    assert before == 0
    ok = Closable()
    close_quickly(ok)
    assert ok.closed and ok.frozen_while_closing > before and gc.get_freeze_count() == before
    failing = Closable(error=RuntimeError("the server would not die"))
    with pytest.raises(RuntimeError):
        close_quickly(failing)
    assert failing.closed and gc.get_freeze_count() == before


def test_closes_overlapping_in_threads_stay_frozen_until_the_last_one_ends():
    first_inside, second_done = threading.Event(), threading.Event()
    seen, before = {}, gc.get_freeze_count()

    def first_waits():  # the first close is still under way when the second one ends
        first_inside.set()
        second_done.wait(timeout=60)
        seen["after_second"] = gc.get_freeze_count()

    a = Closable(inside=first_waits)
    t = threading.Thread(target=close_quickly, args=(a,))
    t.start()
    first_inside.wait(timeout=60)
    close_quickly(Closable())
    second_done.set()
    t.join(timeout=60)
    assert a.closed and seen["after_second"] > before  # the second close did not unfreeze under the first
    assert gc.get_freeze_count() == before


def test_a_heap_frozen_by_the_caller_stays_frozen_after_a_close():
    """`gc.unfreeze` gives back every frozen object: a close that unfroze on its way out unfroze
    what the caller froze (the suite's heap, frozen once per worker: every later training's full
    collection walked torch's objects again). Fails with the close that always unfroze. Checked on
    one object the caller froze, not on the frozen count: other threads of the process (xdist's,
    Prefect's) free frozen objects at any time, and each lowers the count."""
    callers = [object()]  # a tracked container, frozen by the caller below
    gc.freeze()
    assert is_frozen(callers)
    ok = Closable()
    close_quickly(ok)
    assert ok.closed and ok.frozen_while_closing > 0
    assert is_frozen(callers), "the close unfroze the caller's objects"
    with pytest.raises(RuntimeError):
        close_quickly(Closable(error=RuntimeError("the server would not die")))
    assert is_frozen(callers)
    gc.unfreeze()  # the caller's own unfreeze gives everything back, the close froze nothing of its own
    assert gc.get_freeze_count() == 0 and not is_frozen(callers)
    close_quickly(ok)  # and a close on the heap unfrozen again freezes and unfreezes as before
    assert ok.frozen_while_closing > 0 and gc.get_freeze_count() == 0


def is_frozen(obj) -> bool:
    """Whether the tracked `obj` is in the permanent generation: `gc.get_objects()` lists the
    three collected generations only (CPython's gc_get_objects_impl), never the frozen objects."""
    return gc.is_tracked(obj) and not any(o is obj for o in gc.get_objects())


def test_a_repl_backend_runs_leaninteracts_collections_with_the_heap_frozen(tmp_path):
    """ReplBackend.close (every caller's, not only close_quickly's): LeanInteract's `kill` and
    `__del__` each end in `gc.collect()`; each must find the process's objects frozen. Fails with
    the close of before (the collections saw a freeze count of 0)."""
    from tasks.lean import load_theorems
    from tasks.lean.verified import open_verifier
    from tasks.proving.config import ProvingSettings
    from tests.doubles.lean_process import make_repl_double
    from tests.doubles.sample_store import sample_store

    double = make_repl_double(tmp_path / "double")
    store = sample_store(tmp_path / "home")
    backend_settings = {
        "kind": "repl",
        "repl": double.options(),
        "work_dir": str(tmp_path / "work"),
        "sandbox": double.sandbox(),
    }
    settings = ProvingSettings.model_validate({"backend": backend_settings})
    spec = next(iter(load_theorems(store, store.repo_ids())))
    backend = open_verifier(settings.backend, store)
    backend.check_proof(spec, "omega")  # a REPL server runs
    full_collections: list[int] = []

    def seen(phase, info):
        if phase == "start" and info["generation"] == 2:
            full_collections.append(gc.get_freeze_count())

    gc.callbacks.append(seen)
    try:
        backend.close()
        del backend
    finally:
        gc.callbacks.remove(seen)
    assert full_collections, "LeanInteract's kill collected nothing: this test no longer sees what it checks"
    assert all(frozen > 0 for frozen in full_collections), full_collections
