"""The Prefect server a `dojoflow run` talks to, on the project's Prefect home.

Three cases, in this order (docs/terminal-and-server.md):
- `PREFECT_API_URL` is set: that server is used as it is.
- `dojoflow server start` left a server running for this home (`<home>/prefect/server.json`
  names it and it answers): it is reused, so a run pays no server start.
- otherwise a temporary server is started for the run and stopped after it.

Every server runs in its own session (process group), so a Ctrl-C in the terminal reaches
`dojoflow run` only; the run then stops its temporary server itself, after telling it that
the flow run was cancelled. A temporary server also dies with the run whatever kills the
run (SIGKILL, the OOM killer): it is started through `DIE_WITH_PARENT` (tasks/process_group.py),
which asks Linux for SIGTERM when its parent exits (prctl PR_SET_PDEATHSIG) before it execs the
server; a SIGKILLed run once left a 250 MB server behind for good. This module imports no Prefect
(starting it is what costs time).

A temporary server starts under a lock per home (`<home>/prefect/server-start.lock`, held
until it answers): its first start migrates the home's Prefect database, and two servers
migrating one SQLite file at once made the second `dojoflow run` on a fresh home die in
Prefect's migration. A command that finds the lock held says so and waits.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from storage import atomic
from storage.errors import DojoflowError
from tasks.lean.containment import pid_alive
from tasks.process_group import dying_with_this_process

STARTUP_CEILING_S = 180.0  # a loaded machine migrating a fresh database can take a minute


@dataclass
class Server:
    url: str  # the API address, ending in /api
    pid: int | None  # None: started by someone else (PREFECT_API_URL)
    how: str  # "PREFECT_API_URL", "dojoflow server", "temporary"
    process: subprocess.Popen | None = None
    start_lock: int | None = None  # the descriptor holding `start_lock_path` until the server answers

    @property
    def ui_url(self) -> str:
        return self.url.removesuffix("/api")


def prefect_home(home: Path) -> Path:
    return Path(home) / "prefect"


def server_file(home: Path) -> Path:
    return prefect_home(home) / "server.json"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def is_healthy(url: str, timeout: float = 2.0) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=timeout) as r:  # noqa: S310 (a local http URL)
            return r.status == 200
    except (OSError, ValueError):  # ValueError: not a URL at all (PREFECT_API_URL=foo)
        return False


def server_env(home: Path) -> dict:
    """The server's environment: the project's Prefect home, no telemetry."""
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env.update(PREFECT_HOME=str(prefect_home(home)), PREFECT_SERVER_ANALYTICS_ENABLED="false", DO_NOT_TRACK="1")
    return env


def _launch(home: Path, args: list[str], env: dict, log_name: str) -> subprocess.Popen:
    logs = Path(home) / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    prefect_home(home).mkdir(parents=True, exist_ok=True)
    with open(logs / log_name, "ab") as log:  # the child keeps its own descriptor
        return subprocess.Popen(
            args, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
        )


def start_lock_path(home: Path) -> Path:
    return prefect_home(home) / "server-start.lock"


def _lock_start(home: Path, say) -> int:
    """Hold this home's server-start lock (waiting, and saying so, while another command holds it)."""
    path = start_lock_path(home)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        if say is not None:
            say(
                f"another Dojoflow command is starting a Prefect server on {prefect_home(home)} "
                "(the first start migrates its database): waiting for it"
            )
        fcntl.flock(fd, fcntl.LOCK_EX)  # its holder lets go once its server answers, or when it dies
    return fd


def _unlock_start(server: Server) -> None:
    if server.start_lock is not None:
        fd, server.start_lock = server.start_lock, None
        os.close(fd)  # closing the descriptor releases the flock


def start_temporary(home: Path, say=None) -> Server:
    """Start (without waiting) an API-only server for one run: no UI, no background services,
    the same command Prefect's own temporary server runs. The home's start lock is held from
    here until `wait_until_up` returns (or `stop`)."""
    from importlib.util import find_spec

    lock = _lock_start(home, say)
    prefect_dir = Path(find_spec("prefect").origin).parent  # located, not imported: importing costs seconds
    port = free_port()
    env = {
        **server_env(home),
        "PREFECT_UI_ENABLED": "0",
        "PREFECT__SERVER_EPHEMERAL": "1",
        "PREFECT__SERVER_FINAL": "1",
    }
    args = [
        sys.executable,
        "-m",
        "uvicorn",
        "--app-dir",
        str(prefect_dir.parent),
        "--factory",
        "prefect.server.api.server:create_app",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--log-level",
        "error",
        "--lifespan",
        "on",
    ]
    try:
        p = _launch(home, dying_with_this_process(args, signal.SIGTERM), env, "prefect-server-temporary.log")
    except BaseException:
        os.close(lock)
        raise
    return Server(url=f"http://127.0.0.1:{port}/api", pid=p.pid, how="temporary", process=p, start_lock=lock)


def wait_until_up(server: Server, home: Path, ceiling: float = STARTUP_CEILING_S) -> None:
    try:
        _wait_until_up(server, home, ceiling)
    finally:
        _unlock_start(server)


def _wait_until_up(server: Server, home: Path, ceiling: float) -> None:
    deadline = time.monotonic() + ceiling
    while not is_healthy(server.url):
        if server.process is not None and server.process.poll() is not None:
            raise DojoflowError(
                f"the Prefect server exited ({server.process.returncode}) while starting; see {Path(home) / 'logs'}"
            )
        if time.monotonic() > deadline:
            stop(server)
            raise DojoflowError(
                f"the Prefect server at {server.url} did not answer within {ceiling:.0f} s; see {Path(home) / 'logs'}"
            )
        time.sleep(0.1)


def stop(server: Server, grace: float = 10.0) -> None:
    """SIGTERM the server's process group, SIGKILL it if it lingers."""
    _unlock_start(server)
    if server.pid is None:
        return
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(server.pid, sig)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if server.process is not None:
                if server.process.poll() is not None:
                    break
            elif not pid_alive(server.pid):
                break
            time.sleep(0.05)
        else:
            continue
        break
    if server.process is not None and server.process.poll() is None:
        server.process.wait(5)


def kill_now(server: Server | None) -> None:
    """For a second Ctrl-C: no waiting."""
    if server is not None and server.how == "temporary" and server.pid is not None:
        try:
            os.killpg(server.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def running(home: Path) -> Server | None:
    """The server `dojoflow server start` left running for this home, if it answers."""
    path = server_file(home)
    try:
        info = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not pid_alive(int(info.get("pid", -1))) or not is_healthy(info["url"]):
        return None
    return Server(url=info["url"], pid=int(info["pid"]), how="dojoflow server")


def start_persistent(home: Path, port: int | None = None, ceiling: float = STARTUP_CEILING_S) -> Server:
    """`dojoflow server start`: the full server (UI, services) on the project's Prefect home,
    left running; `server.json` names it for later runs and `dojoflow server stop`."""
    found = running(home)
    if found is not None:
        return found
    port = port or 4200
    args = [str(Path(sys.executable).parent / "prefect"), "server", "start", "--host", "127.0.0.1", "--port", str(port)]
    if not Path(args[0]).exists():
        args[:1] = [sys.executable, "-m", "prefect"]
    env = {
        **server_env(home),
        "PREFECT_SERVER_API_PORT": str(port),
        "PREFECT_UI_API_URL": f"http://127.0.0.1:{port}/api",
        "PREFECT_UI_URL": f"http://127.0.0.1:{port}",  # the run links automations' notifications carry
    }  # else the UI asks port 4200
    lock = _lock_start(home, None)
    found = running(home)  # started while this one waited for the lock
    if found is not None:
        os.close(lock)
        return found
    p = _launch(home, args, env, "prefect-server.log")
    server = Server(url=f"http://127.0.0.1:{port}/api", pid=p.pid, how="dojoflow server", process=p, start_lock=lock)
    wait_until_up(server, home, ceiling)
    ensure_limits(server.url)  # gpu, lean, trace: docs/scaling.md
    atomic.write_text(server_file(home), json.dumps({"url": server.url, "pid": server.pid}))
    return server


def stop_persistent(home: Path) -> Server | None:
    server = running(home)
    if server is not None:
        stop(server)
    server_file(home).unlink(missing_ok=True)
    return server


# -- global concurrency limits (docs/scaling.md) --------------------------------------------------------
def default_limits() -> dict[str, int]:
    """The limits `dojoflow server start` creates when missing: `gpu`, training tasks at once (each
    train task takes one slot: its torchrun job holds the node's GPUs); `lean`, Lean checks at once
    (about one per 2 cores); `trace`, repositories traced at once (tracing can take ~100 GB)."""
    cpus = os.cpu_count() or 1
    return {"gpu": 1, "lean": max(1, cpus // 2), "trace": 1}


def ensure_limits(api_url: str, limits: dict[str, int] | None = None, timeout: float = 10.0) -> dict[str, str]:
    """Create each global concurrency limit that does not exist yet (an existing one, perhaps
    resized by hand with `prefect gcl update`, is left as it is). {name: "created" | "kept"}."""
    out = {}
    for name, limit in (limits or default_limits()).items():
        body = json.dumps({"name": name, "limit": limit, "active": True}).encode()
        request = urllib.request.Request(
            f"{api_url.rstrip('/')}/v2/concurrency_limits/",
            data=body,
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=timeout):
                out[name] = "created"
        except urllib.error.HTTPError as e:
            if e.code != 409:  # 409: a limit of that name exists
                raise DojoflowError(f"creating the concurrency limit {name!r} failed: HTTP {e.code}") from e
            out[name] = "kept"
    return out
