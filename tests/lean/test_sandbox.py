"""The sandbox, for real (issue 16, section 3): a payload launched exactly as the REPL is
(the real LeanInteract, Dojoflow's launcher, bubblewrap) tries to write outside its
folder, connect to a listener this test opens on 127.0.0.1, read a secret file planted in
the user's home, and leave a process behind when it dies. Under bubblewrap all four fail;
with the explicit opt-out (`sandbox.unsafe_no_sandbox`) the same payload succeeds, so the
test can fail. Either way the proof's verdict is an error, never proved or rejected.
Nothing waits on a tight deadline: the payload's report is read after the check returns.

    PYTHONPATH=$PWD .venv/bin/python -m pytest tests/lean/test_sandbox.py -q
"""

from __future__ import annotations

import json
import shlex
import socket
import sys
import time
import uuid
from pathlib import Path

import psutil
import pytest

from storage.errors import InputError
from tasks.lean import BackendSettings, judge, open_backend
from tasks.lean.sandbox import Limits, SandboxSpec, bwrap_argv, launch_argv
from tests.doubles.lean_process import make_repl_double
from tests.doubles.sample_store import store, theorems  # noqa: F401  (fixtures)

PAYLOAD = Path(__file__).resolve().parent / "escape_payload.py"
SECRET = "TOP-SECRET-KEY-3141"


def _processes_with(token: str) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        if token in (proc.info["cmdline"] or []):
            found.append(proc)
    return found


def _run_payload(store, theorems, tmp_path, monkeypatch, unsafe: bool) -> dict:
    home = tmp_path / "home"
    home.mkdir()
    (home / ".secret").write_text(SECRET)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GITHUB_ACCESS_TOKEN", "ghp-not-for-lean")
    double = make_repl_double(tmp_path / "double")
    outside = [home / "escaped.txt", double.repl_path / "escaped.txt", tmp_path / "escaped.txt"]
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.setblocking(False)
    token = f"dojoflow-linger-{uuid.uuid4().hex}"
    args = [sys.executable, str(PAYLOAD), "--port", str(listener.getsockname()[1])]
    args += ["--secret", str(home / ".secret"), "--token", token]
    for path in outside:
        args += ["--write", str(path)]
    # The payload replaces the REPL program LeanInteract launches through `lake env`.
    (double.repl_path / ".lake" / "build" / "bin" / "repl").write_text(
        "#!/bin/sh\nexec " + " ".join(shlex.quote(a) for a in args) + "\n"
    )
    settings = BackendSettings(
        kind="repl",
        repl=double.options(),
        work_dir=str(tmp_path / "work"),
        sandbox=double.sandbox(unsafe_no_sandbox=unsafe),
    )
    backend = open_backend(settings, store)
    try:
        check = backend.check_proof(theorems["NatBasics.square_add"], "rfl")
    finally:
        backend.close()
    reports = [json.loads(p.read_text()) for p in (tmp_path / "work").glob("processes/*/escape-report.json")]
    try:
        connection = listener.accept()[0]
        connection.close()
        connected = True
    except BlockingIOError:
        connected = False
    listener.close()
    return {
        "check": check,
        "verdict": judge(check, "rfl"),
        "reports": reports,
        "written": [p for p in outside if p.exists()],
        "connected": connected,
        "token": token,
    }


def test_payload_under_bubblewrap_escapes_nowhere_and_its_verdict_is_an_error(store, theorems, tmp_path, monkeypatch):
    run = _run_payload(store, theorems, tmp_path, monkeypatch, unsafe=False)
    assert run["reports"], "the payload never ran"
    for report in run["reports"]:
        assert all(r.startswith("failed") for r in report["write"]), report["write"]
        assert report["connect"].startswith("failed"), report["connect"]
        assert report["secret"].startswith("failed") and SECRET not in report["secret"], report["secret"]
        assert "GITHUB_ACCESS_TOKEN" not in report["env"]
    assert run["written"] == [] and not run["connected"]
    # Its PID namespace dies with the payload: the lingering process goes with it
    # (polled without a tight deadline; under the opt-out it is still there, below).
    for _ in range(600):
        if not _processes_with(run["token"]):
            break
        time.sleep(0.1)
    assert _processes_with(run["token"]) == []
    check, verdict = run["check"], run["verdict"]
    assert check.error is not None and not check.accepted
    assert not verdict.proved and verdict.reason.startswith("not checked")


def test_same_payload_without_the_sandbox_escapes_so_the_test_above_can_fail(store, theorems, tmp_path, monkeypatch):
    run = _run_payload(store, theorems, tmp_path, monkeypatch, unsafe=True)
    try:
        assert run["reports"], "the payload never ran"
        report = run["reports"][0]
        assert all(r.startswith("ok") for r in report["write"]), report["write"]
        assert len(run["written"]) == 3 and run["connected"]
        assert report["secret"] == f"ok: {SECRET}"
        assert _processes_with(run["token"]), "the lingering process did not outlive the payload"
        assert run["check"].error is not None and not run["verdict"].proved
    finally:
        for proc in _processes_with(run["token"]):
            proc.kill()


def test_without_bubblewrap_untrusted_proofs_are_refused_unless_the_user_opts_out(store, tmp_path):
    repl = make_repl_double(tmp_path / "double").options()
    no_bwrap = {"bwrap_path": str(tmp_path / "no-bwrap")}
    for kind in ("repl", "leandojo"):
        with pytest.raises(InputError, match="unsafe_no_sandbox") as err:
            open_backend(BackendSettings(kind=kind, repl=repl, sandbox=no_bwrap), store)
        assert "bubblewrap" in str(err.value) and "\n" not in str(err.value)
    backend = open_backend(
        BackendSettings(kind="repl", repl=repl, sandbox={**no_bwrap, "unsafe_no_sandbox": True}), store
    )
    backend.close()


def test_bwrap_command_contains_the_process():
    argv = bwrap_argv(
        "bwrap", read_only=["/proj"], writable=["/proj/.lake/own"], cwd="/proj", env={"PATH": "/usr/bin"}, network=False
    )
    assert {"--die-with-parent", "--unshare-all", "--clearenv", "--new-session"} <= set(argv)
    assert "--share-net" not in argv
    assert argv.index("/proj") < argv.index("/proj/.lake/own")  # the writable folder is mounted over the read-only one
    assert argv[argv.index("--setenv") : argv.index("--setenv") + 3] == ["--setenv", "PATH", "/usr/bin"]
    assert "--share-net" in bwrap_argv("bwrap", read_only=[], writable=[], cwd="/", env={}, network=True)


def test_lake_run_from_the_users_home_never_gets_it_writable(tmp_path):
    home, project = tmp_path / "home", tmp_path / "home" / "proj"
    project.mkdir(parents=True)
    limits = Limits("/usr/bin/bwrap", None, None)
    spec = SandboxSpec("/usr/bin/lake", str(project), str(tmp_path / "work"), {"HOME": str(home)}, limits)
    argv, env = launch_argv(spec, ["build"], str(home))
    assert ["--ro-bind", str(home), str(home)] == argv[argv.index(str(home)) - 1 : argv.index(str(home)) + 2]
    assert env["HOME"].startswith(str(tmp_path / "work"))  # a private HOME, not the user's
    argv, _ = launch_argv(spec, ["build"], str(project))
    assert ["--bind", str(project), str(project)] == argv[argv.index(str(project)) - 1 : argv.index(str(project)) + 2]
    assert "--share-net" not in argv  # the build runs offline
    assert "--share-net" in launch_argv(spec, ["exe", "cache", "get"], str(project))[0]  # the fetch step may not


def test_a_sandboxed_process_outlives_the_thread_that_started_it(tmp_path):
    """bwrap's --die-with-parent is PR_SET_PDEATHSIG, tied to the parent *thread*: a Lean process
    started from a Prefect task thread must not die when that thread ends (its warm header would
    be lost). Dying with the starting *process* is the payload test's case (d) above."""
    import subprocess
    import threading

    launcher, program = _sleeper_launcher(tmp_path)
    started = []
    thread = threading.Thread(target=lambda: started.append(subprocess.Popen([str(launcher), "env", str(program)])))
    thread.start()
    thread.join()
    proc = started[0]
    try:
        # A parent-death signal is delivered as the thread ends, which is before the chain (launcher,
        # bubblewrap, lake, the program) is up: wait for the program itself, then watch a while more
        # for a death still on its way up the chain.
        deadline = time.monotonic() + 60
        while not _runs_sleeper(proc.pid):
            assert proc.poll() is None, f"the sandboxed process died with its starting thread ({proc.returncode})"
            assert time.monotonic() < deadline, "the sandboxed program never started"
            time.sleep(0.05)
        deadline = time.monotonic() + 0.5
        while time.monotonic() < deadline:
            assert proc.poll() is None, f"the sandboxed process died with its starting thread ({proc.returncode})"
            time.sleep(0.05)
        assert _runs_sleeper(proc.pid)
    finally:
        proc.terminate()
        assert proc.wait(60) == 128 + 15  # SIGTERM reached it through the launcher, as bwrap reports it


def _runs_sleeper(pid: int) -> bool:
    """Whether the `sleep 600` of `_sleeper_launcher` runs under process `pid`."""
    try:
        return any(p.cmdline() == ["sleep", "600"] for p in psutil.Process(pid).children(recursive=True))
    except psutil.Error:  # a process of the tree went away while it was read
        return False


def _sleeper_launcher(tmp_path):
    """A launcher (Dojoflow's, under bubblewrap) whose `lake env PROGRAM` runs a `sleep 600`."""
    from tasks.lean.availability import contain
    from tasks.lean.config import SandboxSettings
    from tasks.lean.sandbox import write_launcher

    limits = contain(SandboxSettings(), memory_limit_mb=None, cpu_limit_s=None)
    project = tmp_path / "project"
    project.mkdir()
    lake = tmp_path / "bin" / "lake"  # no toolchain here: `lake env PROGRAM` runs PROGRAM
    lake.parent.mkdir()
    lake.write_text('#!/bin/sh\nshift\nexec "$@"\n')
    lake.chmod(0o755)
    program = tmp_path / "sleeper"
    program.write_text("#!/bin/sh\nexec sleep 600\n")
    program.chmod(0o755)
    spec = SandboxSpec(lake=str(lake), project=str(project), work_root=str(tmp_path / "work"), env={}, limits=limits)
    return write_launcher(spec, tmp_path / "launcher"), program


def test_a_tree_stopped_as_lean_interact_stops_it_is_reaped_by_the_time_its_launcher_exits(tmp_path):
    """LeanInteract's `LeanServer.kill` terminates the launcher's descendants outermost first, then
    the launcher, and waits up to 1 s for all of them (lean_interact/server.py). Outer bwrap dies
    first, so inner bwrap (the PID namespace's init) and the Lean process are orphans: reparented
    to init, they stayed zombies until it reaped them (over a second on some machines), and every
    kill waited out that second. The launcher is their subreaper now: when it has exited, nothing
    of its tree is left, not even a zombie."""
    import subprocess

    launcher, program = _sleeper_launcher(tmp_path)
    proc = subprocess.Popen([str(launcher), "env", str(program)])
    try:
        root = psutil.Process(proc.pid)
        tree = root.children(recursive=True)
        deadline = time.monotonic() + 60  # a backstop: the loop ends when `sleep` has started
        while not any(p.name() == "sleep" for p in tree if p.is_running()):
            assert time.monotonic() < deadline and proc.poll() is None, "the sandboxed sleeper never started"
            time.sleep(0.05)
            tree = root.children(recursive=True)
        assert [p.name() for p in tree][:2] == ["bwrap", "bwrap"]  # outer bwrap, then the namespace's init
        for p in tree:  # as server.py `kill` does: the children, in psutil's order, then the launcher
            try:
                p.terminate()
            except psutil.NoSuchProcess:
                pass
        proc.terminate()
        proc.wait(60)
        left = [(p.pid, p.status()) for p in tree if psutil.pid_exists(p.pid) and p.is_running()]
        assert left == [], f"processes of the stopped tree not reaped when its launcher exited: {left}"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_kimina_servers_repls_under_dojoflows_launcher_escape_nowhere(store, theorems, tmp_path, monkeypatch):
    """Dojoflow does not start a kimina server, so it cannot sandbox its REPLs; whoever runs the
    server can put the launcher `python -m tasks.lean.sandbox write-launcher` writes first on
    the server's PATH (the server runs `lake env <repl>`, lake from PATH: kimina-ast-server 2.1.3
    server/repl.py `Repl.start`). The real server, the payload as its REPL: the four escapes fail."""
    import subprocess

    from tests.doubles.kimina_server import API_KEY, kimina_server

    home = tmp_path / "home"
    home.mkdir()
    (home / ".secret").write_text(SECRET)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("LEAN_SERVER_API_KEY", API_KEY)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.setblocking(False)
    token = f"dojoflow-linger-{uuid.uuid4().hex}"
    outside = [home / "escaped.txt", tmp_path / "escaped.txt"]
    args = [sys.executable, str(PAYLOAD), "--port", str(listener.getsockname()[1])]
    args += ["--secret", str(home / ".secret"), "--token", token]
    for path in outside:
        args += ["--write", str(path)]
    launcher_dir, work_root = tmp_path / "launcher", tmp_path / "work" / "processes"
    launcher_dir.mkdir()
    with kimina_server(tmp_path / "kimina", api_key=API_KEY, max_repls=1, lake_dir=launcher_dir) as server:
        server.repl.repl_binary.write_text("#!/bin/sh\nexec " + " ".join(shlex.quote(a) for a in args) + "\n")
        extra = server.repl.sandbox()
        cmd = [sys.executable, "-m", "tasks.lean.sandbox", "write-launcher", str(launcher_dir)]
        cmd += ["--lake", str(server.repl.lake_path), "--project", str(tmp_path / "kimina" / "project")]
        cmd += ["--work-root", str(work_root)]
        for path in extra["read_only_paths"]:
            cmd += ["--read-only", path]
        for path in extra["writable_paths"]:
            cmd += ["--writable", path]
        subprocess.run(cmd, check=True, capture_output=True, text=True)
        backend = open_backend(BackendSettings(kind="kimina", kimina={"url": server.url}), store)
        try:
            check = backend.check_proof(theorems["NatBasics.square_add"], "rfl")
        finally:
            backend.close()
    reports = [json.loads(p.read_text()) for p in work_root.glob("*/escape-report.json")]
    try:
        listener.accept()[0].close()
        connected = True
    except BlockingIOError:
        connected = False
    listener.close()
    assert reports, "the payload never ran under the launcher"
    for report in reports:
        assert all(r.startswith("failed") for r in report["write"]), report["write"]
        assert report["connect"].startswith("failed"), report["connect"]
        assert report["secret"].startswith("failed") and SECRET not in report["secret"], report["secret"]
        assert "LEAN_SERVER_API_KEY" not in report["env"]  # the server's environment stays with the server
    assert [p for p in outside if p.exists()] == [] and not connected
    for _ in range(600):
        if not _processes_with(token):
            break
        time.sleep(0.1)
    assert _processes_with(token) == []
    assert check.error is not None and not judge(check, "rfl").proved


def test_write_launcher_refuses_itself_as_the_real_lake(tmp_path):
    import subprocess

    folder = tmp_path / "launcher"
    cmd = [sys.executable, "-m", "tasks.lean.sandbox", "write-launcher", str(folder), "--lake", str(folder / "lake")]
    res = subprocess.run(
        cmd + ["--project", str(tmp_path), "--work-root", str(tmp_path / "w")], capture_output=True, text=True
    )
    assert res.returncode == 2 and "is the launcher itself" in res.stderr and not (folder / "lake").exists()
