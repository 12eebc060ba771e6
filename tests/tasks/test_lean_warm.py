"""Warm Lean processes per header (docs/lean-backends.md, "Warm Lean processes"): the repl backend
elaborates a file header once per Lean process and reuses its environment for every later
check under it, and after LeanInteract restarts the process (over its memory limit) the header
is replayed once on the new process. Observed in the Lean process double's request log (pids
and commands), with LeanInteract's own restart.

    PYTHONPATH=$PWD .venv/bin/python -m pytest tests/tasks/test_lean_warm.py -q
"""

from __future__ import annotations

import json
from collections import Counter

from storage.sample import SAMPLE_ROOT
from tasks.lean import BackendSettings, judge, open_backend
from tasks.lean.source import file_header
from tests.doubles.lean_process import make_repl_double
from tests.doubles.sample_store import store, theorems  # noqa: F401  (fixtures)

SQUARE_ADD = "unfold square\nsimp only [Nat.add_mul, Nat.mul_add, Nat.two_mul, Nat.mul_comm b a]\nomega"


def header_runs(double, header: str) -> Counter:
    """{pid: how many times the header was sent to that process as a command of its own}."""
    runs = Counter()
    for r in double.requests():
        if json.loads(r["request"]).get("cmd") == header:
            runs[r["pid"]] += 1
    return runs


def test_a_header_is_elaborated_once_per_process_and_replayed_after_a_restart(store, theorems, tmp_path):
    double = make_repl_double(tmp_path / "double")
    theorem = theorems["NatBasics.square_add"]
    header = file_header(theorem, SAMPLE_ROOT / "lean" / "NatBasics")
    settings = BackendSettings(
        kind="repl",
        workers=1,
        memory_limit_mb=512,
        work_dir=str(tmp_path / "work"),
        repl=double.options(),
        sandbox=double.sandbox(),  # under bubblewrap, as real Lean runs
    )
    backend = open_backend(settings, store)
    try:
        for proof in (SQUARE_ADD, "unfold square\nrfl", SQUARE_ADD):
            backend.check_proof(theorem, proof)
        assert list(header_runs(double, header).values()) == [1]  # three checks, one header, one process
        # the process grows past LeanInteract's limit: it restarts it before the next request
        double.faults({"when": "#print axioms", "do": "grow_memory", "rss_mb": 450, "times": 1})
        backend.check_proof(theorem, SQUARE_ADD)
        after = backend.check_proof(theorem, SQUARE_ADD)
        assert judge(after, SQUARE_ADD).proved and after.error is None
    finally:
        backend.close()
    runs = header_runs(double, header)
    assert len(double.pids()) >= 2 and len(runs) >= 2  # a new process, and the header replayed on it
    assert set(runs.values()) == {1}  # once per process, never once per check


def header_elaborations(double, header: str) -> Counter:
    """{pid: how many commands that process elaborated the header in}: sent alone, or leading a
    proof (a command with no `env` starts from an empty environment, so it elaborates it)."""
    runs = Counter()
    for r in double.requests():
        request = json.loads(r["request"])
        if request.get("env") is None and str(request.get("cmd", "")).startswith(header):
            runs[r["pid"]] += 1
    return runs


def test_with_several_workers_a_header_is_elaborated_once_per_process_and_replayed_after_a_crash(
    store, theorems, tmp_path
):
    """workers > 1 (LeanInteract's LeanServerPool): the header goes through the pool's session
    cache once, and each process elaborates it at most once, however many checks it serves; a
    process that crashed is replaced, and the header is replayed on the new one."""
    double = make_repl_double(tmp_path / "double")
    theorem = theorems["NatBasics.square_add"]
    header = file_header(theorem, SAMPLE_ROOT / "lean" / "NatBasics")
    settings = BackendSettings(
        kind="repl", workers=2, work_dir=str(tmp_path / "work"), repl=double.options(), sandbox=double.sandbox()
    )
    backend = open_backend(settings, store)
    try:
        for proof in (SQUARE_ADD, "unfold square\nrfl", SQUARE_ADD, SQUARE_ADD):
            backend.check_proof(theorem, proof)
        before = header_elaborations(double, header)
        assert sum(before.values()) >= 1 and set(before.values()) == {1}  # four checks, once per process
        double.faults({"when": "#print axioms", "do": "crash", "times": 1})
        crashed = backend.check_proof(theorem, SQUARE_ADD)  # the first attempt's process dies; retried
        assert judge(crashed, SQUARE_ADD).proved and crashed.error is None
        for _ in range(3):
            assert judge(backend.check_proof(theorem, SQUARE_ADD), SQUARE_ADD).proved
    finally:
        backend.close()
    after = header_elaborations(double, header)
    assert set(after.values()) == {1}  # never once per check
    assert len(after) > len(before)  # the process that replaced the crashed one got the header replayed
    assert len(double.pids()) == len(after)  # every process that checked had its header
