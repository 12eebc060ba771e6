"""Containment, for real (issue 27 §4): a payload launched exactly as the REPL is (the real
LeanInteract, Dojoflow's launcher, bubblewrap) forks without end, or answers more than any
answer may hold. The fork bomb is bounded twice (the payload stops at `MOST` processes, and
each started process sleeps with a token the test kills by), so a failing test leaves the
host as it found it. Nothing waits on a tight deadline.

    PYTHONPATH=$PWD .venv/bin/python -m pytest tests/lean/test_containment.py -q
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import uuid
from pathlib import Path

import psutil
import pytest

from tasks.lean import BackendSettings, judge, open_backend
from tasks.lean.containment import ANSWER_CAP_MARK, Cgroup, pump_answers
from tests.doubles.lean_process import make_repl_double
from tests.doubles.sample_store import store, theorems  # noqa: F401  (fixtures)

PAYLOAD = Path(__file__).resolve().parent / "containment_payload.py"
MOST = 60  # the payload's own bound: more than the cap below, few enough for any host
CAP = 24  # sandbox.max_processes in the test: the launcher, bwrap and the payload count too


def _with_token(token: str) -> list[psutil.Process]:
    return [p for p in psutil.process_iter(["cmdline"]) if token in (p.info["cmdline"] or [])]


def _check_with_payload(store, theorems, tmp_path, monkeypatch, payload_args, **sandbox):
    monkeypatch.setenv("HOME", str(tmp_path))
    double = make_repl_double(tmp_path / "double")
    args = [sys.executable, str(PAYLOAD), *payload_args]
    (double.repl_path / ".lake" / "build" / "bin" / "repl").write_text(
        "#!/bin/sh\nexec " + " ".join(shlex.quote(a) for a in args) + "\n"
    )
    settings = BackendSettings(
        kind="repl", repl=double.options(), work_dir=str(tmp_path / "work"), sandbox=double.sandbox(**sandbox)
    )
    backend = open_backend(settings, store)
    try:
        return backend.check_proof(theorems["NatBasics.square_add"], "rfl")
    finally:
        backend.close()


def _cgroup_or_nproc_available() -> bool:
    group = Cgroup(8, None)
    try:
        return group.mechanism != "none"
    finally:
        group.close()


@pytest.mark.skipif(
    not _cgroup_or_nproc_available(), reason="no pids cgroup can be made here, and root is exempt from RLIMIT_NPROC"
)
def test_a_fork_bomb_in_the_sandbox_is_capped_and_its_verdict_is_an_error(store, theorems, tmp_path, monkeypatch):
    token = f"dojoflow-fork-{uuid.uuid4().hex}"
    try:
        check = _check_with_payload(
            store,
            theorems,
            tmp_path,
            monkeypatch,
            ["--mode", "fork", "--token", token, "--most", str(MOST)],
            max_processes=CAP,
        )
        reports = [json.loads(p.read_text()) for p in (tmp_path / "work").glob("processes/*/containment-report.json")]
        assert reports, "the payload never ran"
        for report in reports:
            assert report["started"] < CAP and report["error"] is not None, report  # the kernel refused a fork
        assert check.error is not None and not check.accepted
        assert not judge(check, "rfl").proved
        assert _with_token(token) == []  # the cgroup was emptied when the sandbox ended
    finally:
        for proc in _with_token(token):
            proc.kill()


def test_without_the_cap_the_same_fork_bomb_runs_to_its_own_bound(store, theorems, tmp_path, monkeypatch):
    """The test above can fail: with `max_processes: null` the payload starts all it wants."""
    token = f"dojoflow-fork-{uuid.uuid4().hex}"
    try:
        _check_with_payload(
            store,
            theorems,
            tmp_path,
            monkeypatch,
            ["--mode", "fork", "--token", token, "--most", str(MOST)],
            max_processes=None,
        )
        reports = [json.loads(p.read_text()) for p in (tmp_path / "work").glob("processes/*/containment-report.json")]
        assert reports and all(r["started"] == MOST for r in reports), reports
    finally:
        for proc in _with_token(token):
            proc.kill()


def test_an_oversized_answer_is_an_error_with_the_reason_and_is_never_parsed(store, theorems, tmp_path, monkeypatch):
    check = _check_with_payload(
        store, theorems, tmp_path, monkeypatch, ["--mode", "flood", "--mb", "3"], max_answer_mb=1
    )
    assert check.error is not None and "exceeded 1048576 bytes" in check.error, check.error
    verdict = judge(check, "rfl")
    assert verdict.status == "error" and "exceeded" in verdict.reason


def test_the_answer_pump_passes_whole_answers_and_stops_at_the_cap(tmp_path):
    answers = [
        b'{"env": 0}\n\n',
        b'{"messages": [], "env": 1}\n\n',
        b'{"x": "' + b"y" * 5000 + b'"}\n\n',
        b'{"env": 3}\n\n',
    ]
    source, sink = tmp_path / "in", tmp_path / "out"
    source.write_bytes(b"".join(answers))
    with open(source, "rb") as src, open(sink, "wb") as out:
        assert pump_answers(src.fileno(), out.fileno(), 1000) is False
    lines = sink.read_bytes().split(b"\n\n")
    assert lines[:2] == [answers[0][:-2], answers[1][:-2]]  # whole answers first, then the launcher's own
    assert json.loads(lines[2])["message"].startswith(ANSWER_CAP_MARK) and lines[3:] == [b""]
    with open(source, "rb") as src, open(sink, "wb") as out:
        assert pump_answers(src.fileno(), out.fileno(), 10_000) is True
    assert sink.read_bytes() == b"".join(answers)


def test_no_pids_cgroup_is_left_behind(tmp_path):
    group = Cgroup(8, 64 * 1024 * 1024)
    dirs = list(group.dirs)
    group.close()
    assert [d for d in dirs if os.path.exists(d)] == []


def test_the_cgroup_of_a_killed_launcher_is_swept_by_the_next():
    """A launcher killed with SIGKILL (LeanInteract kills the process tree) cannot remove its own
    cgroup; the next launcher removes those whose launcher is gone."""
    import subprocess

    from tasks.lean import containment

    parent = containment._own_v1("pids")
    if parent is None or not os.access(parent, os.W_OK):
        pytest.skip("no writable pids cgroup here")
    gone = subprocess.Popen(["true"])
    gone.wait()
    left = os.path.join(parent, f"{containment.PREFIX}{gone.pid}-test")
    os.mkdir(left)
    group = Cgroup(8, None)
    group.close()
    assert not os.path.exists(left)


@pytest.mark.parametrize("capped", [True, False])
def test_the_trees_total_memory_is_capped_not_only_each_process(store, theorems, tmp_path, monkeypatch, capped):
    """Four processes of 120 MiB each: each fits RLIMIT_AS (memory_limit_mb 400), together they pass
    the tree's cap (the same 400 MiB, a memory cgroup): not all of them finish. With
    `memory_limit_mb: null` (no cap at all) all four do, so the capped case can fail."""
    from tasks.lean import containment

    if capped and containment._own_v1("memory") is None and containment._own_v2() is None:
        pytest.skip("no memory cgroup here")
    monkeypatch.setenv("HOME", str(tmp_path))
    double = make_repl_double(tmp_path / "double")
    args = [sys.executable, str(PAYLOAD), "--mode", "memory", "--most", "4", "--mb", "120"]
    (double.repl_path / ".lake" / "build" / "bin" / "repl").write_text(
        "#!/bin/sh\nexec " + " ".join(shlex.quote(a) for a in args) + "\n"
    )
    settings = BackendSettings(
        kind="repl",
        repl=double.options(),
        work_dir=str(tmp_path / "work"),
        memory_limit_mb=400 if capped else None,
        sandbox=double.sandbox(),
    )
    backend = open_backend(settings, store)
    try:
        check = backend.check_proof(theorems["NatBasics.square_add"], "rfl")
    finally:
        backend.close()
    done = [p.read_text().count("ok") for p in (tmp_path / "work").glob("processes/*/containment-memory.txt")]
    assert done, "the payload never ran"
    assert check.error is not None and not check.accepted
    if capped:
        assert all(n < 4 for n in done), done  # the tree's cap held: 4 x 120 MiB never all resident
    else:
        assert all(n == 4 for n in done), done
