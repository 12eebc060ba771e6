"""Where and how Lean processes run: under bubblewrap (`bwrap`), with the toolchain and
project read-only, a private writable folder, no network, their own PID namespace, CPU
and memory limits, and an environment with no secrets. See docs/lean-backends.md
("Sandbox"). The settings are `tasks.lean.config.SandboxSettings`; this module builds the
`bwrap` command line from them (`bwrap_argv`), and is the one place that does.

LeanInteract starts the REPL as `[lake_path, "env", <repl>]` in the project folder, with
the caller's whole environment. Dojoflow gives it, as `lake_path`, a launcher written by
`write_launcher`: it runs this file as a script, which runs the real `lake` under bwrap:

- `lake env PROGRAM ...` (a Lean process: the REPL): in the project folder, read-only,
  no network;
- `lake build`: in the folder it was asked in (the project, writable), no network;
- anything else (`lake exe cache get`, `lake --version`): the same, with the network:
  this is the step that fetches dependencies before the build;

each with a new private folder under the sandbox's work root as HOME and TMPDIR.

The process runs in the project folder because elan picks the toolchain from the
working directory (its `lean-toolchain`, or a parent's), before lake ever sees `-d`
(elan src/elan/config.rs `find_override` -> `find_override_from_dir_walk(current_dir)`;
src/elan-cli/proxy_mode.rs `create_command_for_dir(&utils::current_dir()?, arg0)`).
`lake` is run by the name it was given, never its resolved target: Debian's elan package
installs `/usr/bin/lake -> elan`, and elan dispatches on argv[0]'s file name
(proxy_mode.rs `arg0.file_name()`); resolving it would run `elan` itself.

This file imports nothing from Dojoflow: it runs as `python -I sandbox.py SPEC ARGS...`.

For a kimina-lean-server, which starts its REPLs itself as `lake env <repl>` with `lake` from its
PATH (kimina-ast-server 2.1.3 `server/repl.py` `Repl.start`), the same launcher can be written
for the server's machine and put first on the server's PATH (docs/lean-backends.md, "Sandbox"):

    python -m tasks.lean.sandbox write-launcher FOLDER --lake "$(command -v lake)" \
        --project "$LEAN_SERVER_PROJECT_DIR" --work-root /var/tmp/kimina-lean [--read-only PATH]...
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

# Read-only system folders every sandbox sees (those that exist): programs, libraries, and
# the few files of /etc that name resolution, TLS and user lookup read. Not /etc as a whole.
SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt")
ETC_FILES = (
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/pki",
    "/etc/resolv.conf",
    "/etc/hosts",
    "/etc/nsswitch.conf",
    "/etc/passwd",
    "/etc/group",
    "/etc/localtime",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/alternatives",
    "/etc/gitconfig",
)


@dataclass(frozen=True)
class Limits:
    """What the sandbox gives a process; `bwrap` None means no sandbox (the explicit opt-out)."""

    bwrap: str | None  # the bwrap executable; None: run unsandboxed (unsafe_no_sandbox)
    memory_limit_mb: int | None  # RLIMIT_AS of the process and its children
    cpu_limit_s: int | None  # RLIMIT_CPU: CPU seconds over the process's life
    read_only: tuple[str, ...] = ()  # more paths the process may read
    writable: tuple[str, ...] = ()  # more paths the process may write
    max_processes: int | None = None  # processes and threads of the whole sandboxed tree (containment.py)
    answer_limit_bytes: int | None = None  # the largest answer a Lean process (`lake env`) may write


@dataclass(frozen=True)
class SandboxSpec:
    lake: str  # the `lake` executable, as named (never resolved: it may be a symlink to elan)
    project: str  # the Lake project whose packages Lean sees
    work_root: str  # each Lean process gets a new private folder under it
    env: dict[str, str]  # the allowed environment of the Lean process
    limits: Limits = field(default_factory=lambda: Limits(None, None, None))


def bwrap_argv(
    bwrap: str,
    *,
    read_only: list[str],
    writable: list[str],
    cwd: str,
    env: dict[str, str],
    network: bool,
) -> list[str]:
    """The `bwrap ... --` prefix: a new mount, PID, IPC, UTS, user and (unless `network`)
    network namespace; only the system folders, `read_only` and `writable` visible; a
    private /tmp; the process dies with its parent; `--clearenv` then exactly `env`."""
    argv = [bwrap, "--die-with-parent", "--new-session", "--unshare-all"]
    if network:
        argv.append("--share-net")
    argv += ["--proc", "/proc", "--dev", "/dev"]
    for path in SYSTEM_PATHS + ETC_FILES:
        argv += ["--ro-bind-try", path, path]
    # Parents before children, so a writable folder inside a read-only one stays writable.
    mounts = {os.path.abspath(p): "--ro-bind" for p in read_only}
    mounts.update({os.path.abspath(p): "--bind" for p in writable})  # writable wins over read-only
    for path in sorted(mounts, key=lambda p: (p.count("/"), p)):
        argv += [mounts[path], path, path]
    # The root is bwrap's own tmpfs, holding the mount points: read-only, so nothing can be
    # written anywhere but the writable folders (no /tmp: TMPDIR is the private folder).
    argv += ["--remount-ro", "/", "--chdir", cwd, "--clearenv"]
    for key, value in sorted(env.items()):
        argv += ["--setenv", key, value]
    return argv + ["--"]


def python_worker_argv(bwrap: str | None, argv: list[str], *, read_only: list[str], **where) -> list[str]:
    """`argv`, a worker run by this Python (lean-dojo's Dojo, tracing), under bwrap: this
    interpreter, its environment, the toolchain and `read_only` visible read-only; `where` is the
    rest of bwrap_argv's keywords (writable, cwd, env: the worker's private_env, network).
    Unchanged when `bwrap` is None (the opt-out)."""
    if bwrap is None:
        return argv
    python = [sys.prefix, sys.base_prefix, os.path.dirname(os.path.realpath(sys.executable))]
    visible = [*python, *_environment().toolchain_paths("lake", where["env"]), *read_only]
    sandboxed = bwrap_argv(bwrap, read_only=visible, **where) + argv
    # Through this file's `--tied` mode, as the lake launcher: alive while the caller's process is
    # (run_tied_to_parent_process says why bwrap must not be a direct child of a passing thread).
    return [sys.executable, "-I", str(Path(__file__).resolve()), TIED, *sandboxed]


def killed_by(bwrap_returncode: int) -> int:
    """The signal that killed a process bwrap ran, from bwrap's exit status, which is 128 +
    the signal (bubblewrap.c `propagate_exit_status`: `128 + WTERMSIG (status)`)."""
    return bwrap_returncode - 128


def set_limits(memory_limit_mb: int | None, cpu_limit_s: int | None) -> None:
    """RLIMIT_AS and RLIMIT_CPU of this process, inherited by what it executes."""
    import resource

    if memory_limit_mb is not None:
        limit = memory_limit_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    if cpu_limit_s is not None:
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_limit_s, cpu_limit_s))


def limit_memory(memory_limit_mb: int | None) -> None:
    set_limits(memory_limit_mb, None)


def probe(bwrap: str) -> str | None:
    """None when `bwrap` can make the namespaces Dojoflow uses here; else why not."""
    found = shutil.which(bwrap)
    if found is None:
        return f"no `{bwrap}` executable (bubblewrap is not installed)"
    argv = bwrap_argv(found, read_only=[], writable=[], cwd="/", env={}, network=False) + ["true"]
    try:
        res = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"`{bwrap}` could not run: {e}"
    if res.returncode != 0:
        why = res.stderr.strip() or f"exit code {res.returncode}"
        return f"`{bwrap}` cannot create namespaces here: {why}"
    return None


def write_launcher(spec: SandboxSpec, folder: Path) -> Path:
    """Write `folder/lake` (an executable that runs lake inside the sandbox) and its spec."""
    folder.mkdir(parents=True, exist_ok=True)
    spec_path = folder / "sandbox.json"
    spec_path.write_text(json.dumps(asdict(spec)))
    launcher = folder / "lake"
    launcher.write_text(
        "#!/bin/sh\nexec "
        + " ".join(shlex.quote(p) for p in (sys.executable, "-I", str(Path(__file__).resolve()), str(spec_path)))
        + ' "$@"\n'
    )
    launcher.chmod(launcher.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP)
    return launcher


def launch_argv(spec: SandboxSpec, args: list[str], cwd: str) -> tuple[list[str], dict[str, str]]:
    """The command and environment that run `lake ARGS` for the launcher (see the module doc)."""
    limits = spec.limits
    env = {k: v for k, v in spec.env.items() if k != "ELAN_TOOLCHAIN"}  # it would override lean-toolchain
    read_only = [*_environment().toolchain_paths(spec.lake, spec.env), *limits.read_only]
    writable = list(limits.writable)
    os.makedirs(spec.work_root, exist_ok=True)
    private = tempfile.mkdtemp(prefix="lean-", dir=spec.work_root)
    writable.append(private)
    env = _environment().private_env(env, private)
    if args[:1] == ["env"]:  # a Lean process: the project read-only, its own folder, no network
        cwd, network = spec.project, False
        read_only.append(spec.project)
        if len(args) > 1 and os.sep in args[1]:  # the program lake runs: its checkout (the REPL's)
            program = Path(args[1])
            lake_dir = next((p for p in program.parents if p.name == ".lake"), None)
            read_only.append(str(lake_dir.parent if lake_dir else program))
    else:  # `lake build` (no network) or a fetch step (network): the folder it was asked in
        network = args[:1] != ["build"]  # (the project; LeanInteract builds the REPL in its checkout)
        home = os.path.abspath(os.path.expanduser(spec.env.get("HOME", "~")))
        # writable, unless it holds the user's home (or is /): then only read
        (read_only if Path(home).is_relative_to(cwd) else writable).append(cwd)
    command = [spec.lake, *args]
    if limits.bwrap is None:
        os.chdir(cwd)
        return command, env
    return bwrap_argv(limits.bwrap, read_only=read_only, writable=writable, cwd=cwd, env=env, network=network) + [
        *command
    ], env


REAP_LIMIT_S = 5.0  # how long the launcher waits, once bwrap has ended, for the rest of its tree to end


def run_tied_to_parent_process(command: list[str], env: dict[str, str], limits: Limits | None = None) -> int:
    """Run `command` (bwrap) as this launcher's child and return its exit status (128+signal
    when killed), ending it when the process that started the launcher dies.

    Not an exec: bwrap's `--die-with-parent` is PR_SET_PDEATHSIG, which Linux ties to the
    parent *thread* (prctl(2): "the parent thread", not the process). LeanInteract starts the
    REPL from whichever thread runs the check (Prefect's task threads come and go), so an
    exec'd bwrap was killed when that thread ended, and warm Lean processes with their
    header were lost. Here bwrap's parent is this launcher's main thread, which lives until
    bwrap ends or the caller's *process* is gone (reparented: `getppid()` changes).

    With `limits` (a Lean process): the tree runs in a cgroup capping its processes and total
    memory, and its answers pass through `containment.pump_answers`, at most
    `answer_limit_bytes` each (issue 27 §4)."""
    containment = _containment()
    caller = os.getppid()
    reaper = containment.become_subreaper()  # the tree's orphans are reaped here, at once (containment.py)
    capped = limits is not None and limits.answer_limit_bytes is not None
    group = None
    if limits is not None and (limits.max_processes is not None or limits.memory_limit_mb is not None):
        memory = None if limits.memory_limit_mb is None else limits.memory_limit_mb * 1024 * 1024
        group = containment.Cgroup(limits.max_processes, memory)
    try:
        child = subprocess.Popen(
            command,
            env=env,
            close_fds=False,
            stdout=subprocess.PIPE if capped else None,
            preexec_fn=group.enter if group is not None else None,  # noqa: PLW1509 (single-threaded here)
        )
        pump = None
        if capped:
            import threading

            def forward_answers():
                if not containment.pump_answers(child.stdout.fileno(), sys.stdout.fileno(), limits.answer_limit_bytes):
                    child.kill()  # an answer over the cap: the tree is stopped (bwrap's --die-with-parent)

            pump = threading.Thread(target=forward_answers, daemon=True)
            pump.start()
        return _wait_tied(child, caller, pump)
    finally:
        if reaper:
            containment.reap_descendants(REAP_LIMIT_S)
        if group is not None:
            group.close()


def _wait_tied(child: subprocess.Popen, caller: int, pump) -> int:
    def forward(signum, _frame):
        child.send_signal(signum)

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, forward)
    while True:
        try:
            code = child.wait(timeout=1.0)
            if pump is not None:
                pump.join()
            return 128 - code if code < 0 else code
        except subprocess.TimeoutExpired:
            if os.getppid() != caller:  # the caller's process died: so does the Lean process
                child.kill()
                child.wait()
                return 128 + signal.SIGKILL


def _containment():
    return _sibling("containment")


def _environment():
    return _sibling("environment")


def _sibling(stem: str):
    """tasks/lean/<stem>.py (stdlib only), loaded by path: this file runs as `python -I` (no package)."""
    import importlib.util

    name = f"dojoflow_sandbox_{stem}"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name(f"{stem}.py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


TIED = "--tied"  # `python -I sandbox.py --tied BWRAP_ARGV...`: run a prepared bwrap command tied to the caller


WRITE_LAUNCHER = "write-launcher"


def write_launcher_main(argv: list[str]) -> int:
    """`write-launcher FOLDER --lake LAKE --project DIR --work-root DIR [...]`: write FOLDER/lake,
    which runs LAKE under bubblewrap as the repl backend's launcher does (module docstring).
    Run as `python -m tasks.lean.sandbox`, since it reads the minimal environment from Dojoflow."""
    import argparse

    ap = argparse.ArgumentParser(
        prog="python -m tasks.lean.sandbox write-launcher", description=write_launcher_main.__doc__
    )
    ap.add_argument("folder", help="where to write `lake` (put it first on the server's PATH)")
    ap.add_argument("--lake", required=True, help="the real `lake` (elan's proxy), never inside FOLDER")
    ap.add_argument("--project", required=True, help="the Lake project the REPLs run in (LEAN_SERVER_PROJECT_DIR)")
    ap.add_argument("--work-root", required=True, help="each Lean process gets a new private folder under it")
    ap.add_argument("--bwrap", default="bwrap", help="the bubblewrap executable")
    ap.add_argument("--memory-limit-mb", type=int, default=None, help="RLIMIT_AS of each Lean process")
    ap.add_argument("--cpu-limit-s", type=int, default=None, help="RLIMIT_CPU of each Lean process")
    ap.add_argument("--read-only", action="append", default=[], help="one more path the process may read")
    ap.add_argument("--writable", action="append", default=[], help="one more path the process may write")
    args = ap.parse_args(argv)
    folder, lake = Path(args.folder).resolve(), os.path.abspath(args.lake)
    if Path(lake).parent == folder:
        print(
            f"--lake {args.lake}: is the launcher itself; pass the real lake (`command -v lake` before "
            "FOLDER is on PATH)",
            file=sys.stderr,
        )
        return 2
    why = probe(args.bwrap)
    if why is not None:
        print(f"--bwrap {args.bwrap}: {why}; install bubblewrap where user namespaces are allowed", file=sys.stderr)
        return 2
    limits = Limits(
        shutil.which(args.bwrap), args.memory_limit_mb, args.cpu_limit_s, tuple(args.read_only), tuple(args.writable)
    )
    spec = SandboxSpec(
        lake,
        str(Path(args.project).resolve()),
        str(Path(args.work_root).resolve()),
        _environment().minimal_env(),
        limits,
    )
    print(write_launcher(spec, folder))
    return 0


def main(argv: list[str]) -> None:
    if argv[:1] == [WRITE_LAUNCHER]:
        sys.exit(write_launcher_main(argv[1:]))
    if argv[:1] == [TIED]:
        sys.exit(run_tied_to_parent_process(argv[1:], dict(os.environ)))
    raw = json.loads(Path(argv[0]).read_text())
    spec = SandboxSpec(
        **{**raw, "limits": Limits(**{k: tuple(v) if isinstance(v, list) else v for k, v in raw["limits"].items()})}
    )
    args = list(argv[1:])
    command, env = launch_argv(spec, args, os.getcwd())
    set_limits(spec.limits.memory_limit_mb, spec.limits.cpu_limit_s)
    if spec.limits.bwrap is None:  # the explicit opt-out: lake itself, as it would run unsandboxed
        os.execvpe(command[0], command, env)
    # A Lean process (`lake env`: the REPL, where proofs run) gets the tree caps and the answer cap;
    # a build or a fetch (the repository's own code, run in parallel jobs) keeps per-process limits.
    lean = args[:1] == ["env"]
    sys.exit(run_tied_to_parent_process(command, env, spec.limits if lean else None))


if __name__ == "__main__":
    main(sys.argv[1:])
