"""The real kimina-lean-server (PyPI `kimina-ast-server`, pinned and installed in its own
venv by tests/doubles/kimina_venv.py) on 127.0.0.1, with the Lean process double as its REPL. Only Lean is faked: the server's
HTTP layer, auth, snippet splitting, REPL manager and reuse run unmodified.

How the package is configured here, read from its source (server/settings.py,
server/repl.py, server/__main__.py of kimina-ast-server 2.1.3):
- settings come from `LEAN_SERVER_*` environment variables and a `.env` file in the
  working directory; the server runs in an empty folder so no stray `.env` is read;
- it binds `0.0.0.0` unless `LEAN_SERVER_HOST` says otherwise: we bind 127.0.0.1;
- it starts each REPL as `lake env <LEAN_SERVER_REPL_PATH>` in `LEAN_SERVER_PROJECT_DIR`
  (lake from PATH) under `RLIMIT_AS = LEAN_SERVER_MAX_REPL_MEM`: PATH starts with the
  double's fake `lake`, whose `env PROGRAM` runs PROGRAM as `lake env` does;
- at start it checks that the REPL, the AST-export binary, its project and the project
  dir exist (`validate_paths`); the AST export (`/api/ast`) is not used by Dojoflow, so
  that binary is a placeholder that is never run;
- it connects to a database only when `LEAN_SERVER_DATABASE_URL` is set: it is removed.
  Importing it still needs a generated Prisma client (server/prisma_client.py runs
  `prisma generate` on first import). Prisma's CLI (from the npm registry, run by Node)
  then downloads its query and schema engines from Prisma's own host, which cannot be
  reached here or in CI: `PRISMA_QUERY_ENGINE_BINARY` / `PRISMA_SCHEMA_ENGINE_BINARY`
  point it at placeholders instead. Generating the client never runs an engine, and
  without a database URL the server never starts one (db.connect is not called);
- `LEAN_SERVER_API_KEY` set makes `/api/check` (not `/health`) demand
  `Authorization: Bearer <key>` (server/auth.py).
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.doubles.kimina_venv import LEGACY, server_python
from tests.doubles.lean_process import ReplDouble, make_repl_double
from tests.ports import free_port

STARTUP_CEILING_S = 180.0  # a backstop against a server that never comes up, not a deadline


@dataclass(frozen=True)
class KiminaServer:
    url: str
    api_key: str | None
    repl: ReplDouble  # the Lean process double the server launches; its log is what reached "Lean"
    log_path: Path  # the server's own output

    def commands(self) -> list[dict]:
        """Every REPL request the server sent to Lean processes, with the process id."""
        return [{"pid": r["pid"], **json.loads(r["request"])} for r in self.repl.requests()]

    def snippets(self) -> str:
        """All Lean text that reached Lean processes."""
        return "\n".join(c.get("cmd", "") for c in self.commands())

    def log_tail(self, chars: int = 4000) -> str:
        return self.log_path.read_text(errors="replace")[-chars:] if self.log_path.exists() else ""


def _placeholder(path: Path) -> Path:
    """An executable that must never run: it says so and fails."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\necho '{path.name} is a placeholder: these tests never run it' >&2\nexit 1\n")
    path.chmod(0o755)
    return path


def _server_env(
    folder: Path,
    repl: ReplDouble,
    port: int,
    api_key: str | None,
    max_repls: int,
    legacy: bool,
    lake_dir: Path | None = None,
) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_SERVER_")}
    project = folder / "project"
    project.mkdir(exist_ok=True)
    # `prisma generate` runs the `prisma-client-py` generator from PATH: the server venv's bin
    # (`lake_dir`, when given, comes first: a `lake` of the test's own, e.g. Dojoflow's sandbox launcher)
    first = [str(lake_dir)] if lake_dir is not None else []
    path = os.pathsep.join([*first, str(repl.lake_path.parent), str(server_python().parent), env.get("PATH", "")])
    env.update(
        PRISMA_QUERY_ENGINE_BINARY=str(_placeholder(folder / "prisma" / "query-engine")),
        PRISMA_SCHEMA_ENGINE_BINARY=str(_placeholder(folder / "prisma" / "schema-engine")),
        PRISMA_PY_GENERATE_SKIP_WARNING="1",
    )
    env.update(
        LEAN_SERVER_HOST="127.0.0.1",
        LEAN_SERVER_PORT=str(port),
        LEAN_SERVER_REPL_PATH=str(repl.repl_binary),
        LEAN_SERVER_PROJECT_DIR=str(project),
        LEAN_SERVER_AST_EXPORT_BIN=str(_placeholder(folder / "ast_export" / "ast-export")),
        LEAN_SERVER_AST_EXPORT_PROJECT_DIR=str(folder / "ast_export"),
        LEAN_SERVER_MAX_REPLS=str(max_repls),
        LEAN_SERVER_MAX_REPL_MEM="4G",
        # At INFO the server renders every snippet and every answer's body through rich
        # (routers/check.py:192-209, repl.py `log_snippet`): seconds for a large answer, and CPU on
        # every check. At ERROR it renders each exception it logs (`logger.exception` on every REPL
        # timeout and crash the tests inject: routers/check.py:200, repl.py:296) as a rich traceback
        # that lexes each frame's source file with pygments (server/logger.py `RichHandler(
        # rich_tracebacks=True)`): about 1 s of CPU per test file of faults. No test reads the log;
        # DOJOFLOW_KIMINA_LOG_LEVEL=WARNING (or INFO) brings those lines back when a test needs reading.
        LEAN_SERVER_LOG_LEVEL=os.environ.get("DOJOFLOW_KIMINA_LOG_LEVEL", "CRITICAL"),
        PATH=path,
        PYTHONUNBUFFERED="1",
        COLUMNS="200",
    )
    if api_key is not None:
        env["LEAN_SERVER_API_KEY"] = api_key
    if legacy:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(LEGACY), env.get("PYTHONPATH", "")) if p)
    return env


def _pid_namespace() -> list[str]:
    """The command prefix that runs the server in a PID namespace of its own, with the machine's
    whole file system and network (`bwrap --dev-bind / /`, no other namespace), or nothing where
    bubblewrap cannot make one (tasks/lean/sandbox.py `probe`).

    Why: the server watches each REPL it keeps, idle ones too, once a second twice over
    (server/repl.py `_cpu_monitor`, `_mem_monitor`: `psutil.Process.children(recursive=True)`),
    and psutil finds children by reading the `stat` file of every process in /proc
    (psutil/_pslinux.py `ppid_map`). A session's shared server lives as long as its pytest worker:
    with two idle REPLs it took 0.47 s of CPU per 30 s on the test box (127 processes in /proc),
    0.10 s in a namespace whose /proc holds only its own tree. The server runs unmodified and
    watches the same processes; it is the whole tree's init that stops with it."""
    from tasks.lean.sandbox import probe

    if probe("bwrap") is not None:
        return []
    return [
        shutil.which("bwrap"),
        "--dev-bind",
        "/",
        "/",
        "--unshare-pid",
        "--proc",
        "/proc",
        "--die-with-parent",
        "--",
    ]


def _wait_ready(url: str, proc: subprocess.Popen, log_path: Path) -> None:
    """Poll `/health` until it answers; fail with the server's log if the process exits."""
    started = time.monotonic()
    with httpx.Client(timeout=5) as client:  # one client: `httpx.get` builds an SSL context per call (30 ms CPU)
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"kimina-ast-server exited with {proc.returncode}:\n{log_path.read_text()[-4000:]}")
            try:
                if client.get(url + "/health").status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if time.monotonic() - started > STARTUP_CEILING_S:
                raise RuntimeError(f"kimina-ast-server did not answer /health:\n{log_path.read_text()[-4000:]}")
            time.sleep(0.1)


@contextmanager
def kimina_server(
    folder: Path,
    *,
    api_key: str | None = None,
    max_repls: int = 2,
    legacy: bool = False,
    lake_dir: Path | None = None,
    own_pid_namespace: bool = False,
) -> Iterator[KiminaServer]:
    """Start `python -m server` (the package's own entry point) and stop it afterwards;
    `legacy` runs kimina_venv.LEGACY_SERVER (2.0.x) instead of the pinned 2.1.x; `lake_dir`
    goes first on the server's PATH (it starts its REPLs as `lake env <repl>`, lake from PATH);
    `own_pid_namespace` runs it in a PID namespace of its own (`_pid_namespace`)."""
    folder = Path(folder)
    repl = make_repl_double(folder / "lean")
    port = free_port()  # this pytest-xdist worker's own range (tests/ports.py)
    run_dir = folder / "run"
    run_dir.mkdir(parents=True, exist_ok=True)
    log_path = folder / "server.log"
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            [*(_pid_namespace() if own_pid_namespace else []), str(server_python()), "-m", "server"],
            cwd=run_dir,
            env=_server_env(folder, repl, port, api_key, max_repls, legacy, lake_dir),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    server = KiminaServer(f"http://127.0.0.1:{port}", api_key, repl, log_path)
    try:
        _wait_ready(server.url, proc, log_path)
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


API_KEY = "s3cret-kimina-key"  # the servers below demand it on /api/check
_SHARED: dict[bool, tuple[ExitStack, KiminaServer]] = {}


def shared_server(legacy: bool = False) -> KiminaServer:
    """One server per version for the whole test session, started on first use (the session
    fixtures below and the contract suite's harness share it), stopped when Python exits; in a
    PID namespace of its own (`_pid_namespace`: it idles for the rest of the session)."""
    if legacy not in _SHARED:
        stack = ExitStack()
        folder = Path(tempfile.mkdtemp(prefix="kimina-legacy-" if legacy else "kimina-"))
        stack.callback(shutil.rmtree, folder, True)
        server = stack.enter_context(kimina_server(folder, api_key=API_KEY, legacy=legacy, own_pid_namespace=True))
        if not _SHARED:
            atexit.register(stop_shared_servers)
        _SHARED[legacy] = (stack, server)
    return _SHARED[legacy][1]


def stop_shared_servers() -> None:
    while _SHARED:
        _SHARED.popitem()[1][0].close()


@pytest.fixture(scope="session")
def kimina() -> KiminaServer:
    """The real kimina server (the pinned 2.1.x), with an API key."""
    return shared_server()


@pytest.fixture(scope="session")
def kimina_legacy() -> KiminaServer:
    """The 2.0.x server the conformance reference was read from, for the behaviours that differ."""
    return shared_server(legacy=True)
