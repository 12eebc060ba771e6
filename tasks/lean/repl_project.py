"""One traced repository for the `repl` backend (tasks/lean/repl.py): its LeanInteract REPL
config, behind Dojoflow's sandbox launcher; its tactic-mode servers (`ReplWorker`, each with the env
ids of the file headers it elaborated, per process); and, with several workers, the
`LeanServerPool` whole proofs are checked on, with the session ids of the file headers run
through it (`pool_headers`, see repl.py's docstring).
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

from storage.errors import InputError

from .availability import ELAN, LEAN_EXTRA, find_lake, module_missing, sandbox_limits
from .closing import heap_frozen
from .config import BackendSettings
from .environment import minimal_env
from .sandbox import SandboxSpec, write_launcher


@dataclass
class ReplWorker:
    server: object  # lean_interact.AutoLeanServer
    headers: dict = field(default_factory=dict)  # (pid, file, line) -> env id of the file header
    busy: int = 0

    @property
    def pid(self) -> int | None:
        proc = getattr(self.server, "_proc", None)
        return None if proc is None else proc.pid


class ReplProject:
    """One traced repository: its REPL config, its tactic-mode servers, its checking pool."""

    def __init__(self, settings: BackendSettings, directory: Path, work_root: Path):
        from lean_interact import LeanREPLConfig, LocalProject

        self.settings = settings
        self.directory = directory
        opts = settings.repl
        real_lake = find_lake(opts.lake_path) or opts.lake_path
        launcher_dir = Path(tempfile.mkdtemp(prefix="launcher-", dir=work_root))
        self.launcher = write_launcher(
            SandboxSpec(
                lake=os.path.abspath(real_lake),  # not resolved: `lake` may be a symlink to elan (Debian)
                project=str(directory.resolve()),
                work_root=str((work_root / "processes").resolve()),
                env=minimal_env(),
                limits=sandbox_limits(settings),
            ),
            launcher_dir,
        )
        if opts.build_project:
            self._build()
        # Relative paths are the user's, from where Dojoflow runs; the sandbox moves each Lean process
        # to a folder of its own, where they would name nothing (conformance #16).
        kwargs = {"cache_dir": _absolute(opts.cache_dir)} if opts.cache_dir else {}
        if opts.repl_rev:
            kwargs["repl_rev"] = opts.repl_rev
        self.config = LeanREPLConfig(
            project=LocalProject(directory=str(directory), lake_path=str(self.launcher), auto_build=False),
            local_repl_path=_absolute(opts.repl_path) if opts.repl_path else None,
            build_repl=opts.build_repl,
            lake_path=str(self.launcher),
            memory_hard_limit_mb=settings.memory_limit_mb,
            **kwargs,
        )
        self.workers: list[ReplWorker] = []
        self.pool = None
        self.pool_headers: dict[str, int] = {}  # file header -> its session id in the pool's cache
        self.header_lock = threading.Lock()
        self._turn = 0
        self.lock = threading.Lock()

    def _build(self) -> None:
        """`lake exe cache get` (Mathlib's, allowed to fail) and `lake build`, inside the sandbox's env."""
        for args, must in ((["exe", "cache", "get"], False), (["build"], True)):
            res = subprocess.run([str(self.launcher), *args], cwd=self.directory, capture_output=True, text=True)
            if must and res.returncode != 0:
                raise InputError(
                    str(self.directory),
                    f"`lake {' '.join(args)}` failed: {res.stderr.strip()[-2000:]}",
                    "build the project yourself, or set backend.repl.build_project: false",
                )

    def worker(self) -> ReplWorker:
        """A tactic-mode server: a new one while fewer than `workers` exist, else the next in turn
        (a theorem stays on the server it was started on)."""
        from lean_interact import AutoLeanServer

        with self.lock:
            if len(self.workers) < self.settings.workers:
                self.workers.append(ReplWorker(AutoLeanServer(self.config)))
                chosen = self.workers[-1]
            else:
                chosen = self.workers[self._turn % len(self.workers)]
                self._turn += 1
            chosen.busy += 1
            return chosen

    def release(self, worker: ReplWorker) -> None:
        with self.lock:
            worker.busy -= 1

    def checker(self):
        """Where whole proofs are checked: a LeanServerPool when several workers are configured."""
        if self.settings.workers == 1:
            return None
        from lean_interact import LeanServerPool

        with self.lock:
            if self.pool is None:
                self.pool = LeanServerPool(self.config, num_workers=self.settings.workers)
            return self.pool

    def close(self) -> None:
        with heap_frozen():  # LeanInteract's kill ends in a full collection (tasks/lean/closing.py)
            for w in self.workers:
                w.server.kill()
            if self.pool is not None:
                self.pool.close()


def _absolute(path: str) -> str:
    return str(Path(path).expanduser().resolve())


def check_repl(settings: BackendSettings) -> None:
    """The repl backend's `available` (tasks/lean/registry.py): lean-interact, `lake`, a sandbox, the checkouts."""
    sandbox_limits(settings)  # Dojoflow starts its Lean processes: they must be contained
    if module_missing("lean_interact"):
        raise InputError("backend.kind: repl", "the Python package lean-interact is not installed", LEAN_EXTRA)
    if find_lake(settings.repl.lake_path) is None:
        raise InputError(
            "backend.repl.lake_path",
            f"no `lake` executable at {settings.repl.lake_path!r} (the REPL backend runs Lean through lake)",
            ELAN,
        )
    for repo, folder in settings.repl.projects.items():
        if not os.path.isdir(folder):
            raise InputError(
                f"backend.repl.projects[{repo}]",
                f"{folder} is not a folder",
                "give the local checkout of the traced repository at its traced commit",
            )


def repl_toolchain(settings: BackendSettings, theorem) -> tuple[str, str] | None:
    """The configured checkout's lean-toolchain, where LeanInteract picks the REPL tag from it;
    None where the user built the REPL (`repl_path`) or the checkout has none."""
    if settings.repl.repl_path is not None:
        return None
    from .source import project_dir

    toolchain = project_dir(theorem, settings.repl.projects, "backend.repl.projects") / "lean-toolchain"
    return (str(toolchain.parent), toolchain.read_text()) if toolchain.exists() else None
