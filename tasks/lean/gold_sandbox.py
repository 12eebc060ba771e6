"""A `landrun` for comparator where landrun cannot contain anything: the same command line, run
under bubblewrap by Dojoflow's sandbox (tasks/lean/sandbox.py).

comparator runs `lake build` and `lean4export` as `$COMPARATOR_LANDRUN --best-effort --ro / --rw
/dev -ldd -add-exec [--env NAME]... [--ro P]... [--rwx P]... [--rox P]... -- CMD ARGS...`
(leanprover/comparator 19e111e, Main.lean `buildLandrunArgs`). landrun needs the kernel's Landlock
LSM, and `--best-effort` makes it run the command *unsandboxed* where Landlock is missing; so where
/sys/kernel/security/lsm does not list `landlock` (tasks/lean/gold.py `choose_sandbox`) Dojoflow
hands comparator this launcher instead. It keeps landrun's meaning, made stricter:
- `--ro /` is not the whole file system: the system folders, the toolchain, the paths the spec
  names (the theorem's checkout and its packages, `backend.sandbox.read_only_paths`) and those
  comparator names (`--ro`, `--rox`: the project, the Lean prefix, git) are read-only; `--rw`/`--rwx`
  paths (the project's `.lake`) are writable; `/dev` is bwrap's own;
- no network, its own PID namespace, dies with its parent;
- the environment is only the `--env` names comparator passes (PATH, HOME, LEAN_PATH,
  LEAN_ABORT_ON_PANIC), taken from its own environment;
- RLIMIT_AS and RLIMIT_CPU from `backend.memory_limit_mb` and `backend.sandbox.cpu_limit_s`.

    python -I tasks/lean/gold_sandbox.py SPEC.json --best-effort --ro / ... -- lake build Solution
"""

from __future__ import annotations

import json
import os
import shlex
import stat
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a file (`python -I`, once per comparator step): sandbox.py by its path, as
    # sandbox.py loads its siblings; importing tasks.lean.sandbox would run the tasks.lean package first (pydantic,
    # the backends' settings: 3x the CPU of this launcher, 0.25 s against 0.08 s per step). Stdlib only, as it is.
    import importlib.util

    _spec = importlib.util.spec_from_file_location("dojoflow_sandbox", Path(__file__).with_name("sandbox.py"))
    _sandbox = sys.modules[_spec.name] = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_sandbox)
    SYSTEM_PATHS, bwrap_argv = _sandbox.SYSTEM_PATHS, _sandbox.bwrap_argv
    run_tied_to_parent_process, set_limits = _sandbox.run_tied_to_parent_process, _sandbox.set_limits
else:
    from tasks.lean.sandbox import SYSTEM_PATHS, bwrap_argv, run_tied_to_parent_process, set_limits

VALUE_FLAGS = ("--ro", "--rox", "--rw", "--rwx", "--env", "--bind-tcp", "--connect-tcp", "--log-level")
EXTRA_READ_ENV = "DOJOFLOW_GOLD_READ"  # os.pathsep-joined paths of this run (the theorem's checkout)


def parse(argv: list[str]) -> tuple[dict[str, list[str]], list[str]]:
    """landrun's flags (value flags as lists, by name) and the command after them."""
    flags: dict[str, list[str]] = {f: [] for f in VALUE_FLAGS}
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            return flags, argv[i + 1 :]
        if arg in VALUE_FLAGS:
            flags[arg].append(argv[i + 1])
            i += 2
        elif arg.startswith("-"):
            i += 1  # --best-effort, -ldd, -add-exec, --unrestricted-*: no value
        else:
            return flags, argv[i:]
    return flags, []


def bubblewrap_command(spec: dict, argv: list[str], environ: dict[str, str], cwd: str) -> tuple[list[str], dict]:
    """The bwrap command and environment for one landrun command line (module docstring)."""
    flags, command = parse(argv)
    if not command:
        raise SystemExit("landrun (Dojoflow's bubblewrap launcher): no command given")
    extra = [p for p in environ.get(EXTRA_READ_ENV, "").split(os.pathsep) if p]
    wide = {"/", "/dev"}
    read_only = [*spec["read_only"], *extra, *(p for p in flags["--ro"] + flags["--rox"] if p not in wide)]
    writable = [p for p in flags["--rw"] + flags["--rwx"] if p not in wide]
    env = {name: environ[name] for name in flags["--env"] if name in environ}
    os.makedirs(spec["work_root"], exist_ok=True)
    if spec.get("bwrap") is None:  # backend.sandbox.unsafe_no_sandbox: as comparator's fake-landrun.sh
        return command, {**environ}
    existing = [p for p in read_only if os.path.exists(p) and p not in SYSTEM_PATHS]
    bwrap = bwrap_argv(spec["bwrap"], read_only=existing, writable=writable, cwd=cwd, env=env, network=False)
    return bwrap + command, env


def write_landrun_launcher(spec: dict, folder: Path) -> Path:
    """Write `folder/landrun` (this launcher with `spec` baked in) for COMPARATOR_LANDRUN."""
    folder.mkdir(parents=True, exist_ok=True)
    spec_path = folder / "gold-sandbox.json"
    spec_path.write_text(json.dumps(spec))
    launcher = folder / "landrun"
    words = (sys.executable, "-I", str(Path(__file__).resolve()), str(spec_path))
    launcher.write_text("#!/bin/sh\nexec " + " ".join(shlex.quote(w) for w in words) + ' "$@"\n')
    launcher.chmod(launcher.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP)
    return launcher


def main(argv: list[str]) -> int:
    spec = json.loads(Path(argv[0]).read_text())
    command, env = bubblewrap_command(spec, argv[1:], dict(os.environ), os.getcwd())
    set_limits(spec.get("memory_limit_mb"), spec.get("cpu_limit_s"))
    if spec.get("bwrap") is None:
        os.execvpe(command[0], command, env)
    return run_tied_to_parent_process(command, env)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
