"""Test session settings: offline, quiet Prefect, and one embedded Prefect server.

Flow tests use the `prefect` fixture: one `prefect_test_harness` (a real temporary
Prefect server and database) for the whole session, started on first use. Tests whose
Dojoflow home starts a Prefect server of its own seed it with `migrated_prefect_db`
(tests/prefect_db.py), a copy of the session server's database as it started.
"""

import os
import signal
from pathlib import Path

# A suite started with `&` by a non-interactive shell inherits SIGINT ignored, and Python then installs
# no KeyboardInterrupt handler; an ignored signal stays ignored across exec, so every process a test
# starts would ignore the Ctrl-C it is sent (a supervisor once trained all 10,000 steps of the Ctrl-C
# test). A caught signal returns to the default at exec, so catching it here fixes the children too.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
# The session server (and any server a test starts with this environment) writes received events to
# its database every 0.5 s instead of Prefect's 5 s (or at 20 events): a test reading events back
# through /events/filter (tests/flows/test_events.py) waited out most of those 5 s per read.
os.environ.setdefault("PREFECT_SERVER_SERVICES_EVENT_PERSISTER_FLUSH_INTERVAL", "0.5")
# The test server tells a task refused a concurrency slot to retry within 0.5 s, not after the mean
# slot occupancy (2 s for a new limit, more for `trace` once ingests held it; capped at 30 s):
# tests/flows/test_concurrency_taken.py slept that out twice (prefect/server/api/concurrency_limits_v2.py).
os.environ.setdefault("PREFECT_SERVER_CONCURRENCY_MAXIMUM_CONCURRENCY_SLOT_WAIT_SECONDS", "0.5")
# One OpenMP thread per process: the suite runs 3 pytest-xdist workers (and their servers and children) on
# 2 cores, and torch's default of one thread per core oversubscribes them; OpenMP's spinning threads then
# wait on each other. Measured on the shared 2-core box at load 11-14, two processes each training and
# sampling a tiny Qwen2 at once: 300-360 s with torch's default of 2 threads, 8-17 s with 1. The
# tiny models gain nothing from a second thread. A launched trainer's children inherit it (launch.py
# sets OMP_NUM_THREADS only when it is unset).
os.environ.setdefault("OMP_NUM_THREADS", "1")

import pytest  # noqa: E402

# The real kimina server (session fixtures `kimina`, `kimina_legacy`): one each per test session.
from tests.doubles.kimina_server import kimina, kimina_legacy  # noqa: E402, F401
from tests.prefect_db import copy_db, one_migration_per_run  # noqa: E402


@pytest.fixture(scope="session")
def prefect(tmp_path_factory):
    import prefect.testing.utilities as harness
    from prefect.settings import PREFECT_SERVER_DATABASE_CONNECTION_URL

    from tests.ports import free_port

    # One harness server per pytest-xdist worker, on a port of the worker's own (tests/ports.py).
    harness._find_available_port = free_port
    # The workers' servers migrate one database between them (tests/prefect_db.py).
    shared = tmp_path_factory.getbasetemp()
    shared = shared.parent if os.environ.get("PYTEST_XDIST_WORKER") else shared
    with (
        one_migration_per_run(harness, shared) as publish,
        harness.prefect_test_harness(server_startup_timeout=600),  # a ceiling: 3 workers on a loaded box
    ):
        # The server migrated its fresh database before it answered: copied now, it holds no run.
        url = PREFECT_SERVER_DATABASE_CONNECTION_URL.value()
        migrated = tmp_path_factory.mktemp("migrated-prefect-db") / "prefect.db"
        copy_db(url.split(":///", 1)[1], migrated)
        publish(migrated)
        yield migrated


@pytest.fixture(scope="session")
def migrated_prefect_db(prefect) -> Path:
    """A Prefect database with every migration applied and no runs (tests/prefect_db.py)."""
    return prefect


# On pytest-xdist, `--dist loadfile` (pyproject.toml's addopts) keeps each test file on one worker,
# so a module fixture (a trained checkpoint, a finished run) is made once, not once per worker that
# got a test of the file. The workers take files in collection order; the longest files (measured:
# setup + calls of the whole file under `pytest -n 4`, one long test's stall left out) are put first,
# so that no worker ends the run alone on a long file. Every other file keeps its place after them.
LONGEST_FILES_FIRST = (  # longest first: `--durations=0` at a155eac (idle 2-core box, summed per file)
    "tests/flows/test_curriculum.py",
    "tests/flows/test_expert_iteration.py",
    "tests/e2e/test_deployment.py",  # with the cancel-from-UI test: one server, pool and worker for both
    "tests/tasks/test_launch.py",
    "tests/flows/test_run_terminal.py",
    "tests/e2e/test_report_in_ui.py",  # with the training-logs test: one `ui_server` for both
    "tests/e2e/test_automations.py",
    "tests/lean/test_backend_contract.py",
    "tests/flows/test_nightly.py",
    "tests/tasks/test_lean_repl.py",
    "tests/flows/test_proving.py",
    "tests/flows/test_expert_whole_proof.py",
    "tests/lean/test_adversarial.py",
    "tests/tasks/test_launch_trainers.py",
    "tests/flows/test_terminal_pty.py",
    "tests/tasks/test_launch_grpo_shards.py",
    "tests/storage/test_leandojo.py",
    "tests/lean/test_guard_probes.py",
    "tests/tasks/test_sft.py",
    "tests/tasks/test_lean_leandojo.py",
    "tests/tasks/test_retriever.py",
    "tests/flows/test_events.py",
    "tests/tasks/test_lean_verified.py",
    "tests/flows/test_prove.py",
    "tests/lean/test_containment.py",
    "tests/flows/test_benchmarks.py",
)


def pytest_collection_modifyitems(config, items):
    rank = {path: i for i, path in enumerate(LONGEST_FILES_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))  # stable sort


# Every transformers `Trainer.train()` starts with a full garbage collection (accelerate's
# `free_memory`), and LeanInteract's server kill ends in one: in a pytest worker holding torch,
# transformers, TRL, Prefect and the collected items (~550k objects) each walks them all, 0.3-1 s
# of CPU, more than most tiny trainings. At the first test of each file, and after a test or fixture
# that imported many modules (the trainers' libraries load lazily), the unfrozen objects are
# collected and the survivors frozen (`gc.freeze`): later collections walk only what tests create
# since. Garbage is collected before it is frozen, so nothing a finished file dropped stays; what
# a test still holds may become unreachable later and then waits for the process's end.
# tasks/lean/closing.heap_frozen leaves this freeze as it is (tests/lean/test_closing.py).
_heap_frozen_at = {"file": None, "modules": 0}


def _freeze_the_heap(file: str | None) -> None:
    """Collect and freeze at a new test file (`file`) or after 100 more modules than at the last freeze."""
    import gc
    import sys

    new_file = file is not None and file != _heap_frozen_at["file"]
    if new_file or len(sys.modules) >= _heap_frozen_at["modules"] + 100:
        gc.collect()
        gc.freeze()
        _heap_frozen_at.update(file=file or _heap_frozen_at["file"], modules=len(sys.modules))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    _freeze_the_heap(item.nodeid.split("::", 1)[0])


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(fixturedef, request):
    try:
        return (yield)
    finally:
        _freeze_the_heap(None)


def pytest_unconfigure(config):
    """The frozen objects are handed back before the interpreter ends: its last collections skip
    frozen ones, and duckdb's bindings (nanobind) then report their live objects as leaks."""
    import gc

    gc.unfreeze()
