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
