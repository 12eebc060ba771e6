"""The two sandboxed steps of a trace, each the repository's own code running under bubblewrap.

1. Fetch (`fetch_dependencies`): `lake resolve-deps` in the checkout, WITH the network. Lake
   elaborates the lakefile (which may run code: `run_io`, `meta if`) and clones every package of
   lake-manifest.json at its recorded revision into `.lake/packages/`, and stops there: nothing
   is built (Lake's CLI/Main.lean `| "resolve-deps" => lake.resolveDeps`, which loads the
   workspace only; lean4 tests/lake/tests/meta/test.sh checks that it materializes a dependency).
   Only the checkout and a private folder are writable.
2. Build and trace (`run_worker`): the tracing worker (tasks/tracing/worker.py), that is lean-dojo,
   its `lake build`, ExtractData.lean and the `lake build Lean4Repl` after it, WITHOUT the network
   (its own empty network namespace). lean-dojo's clone of the checkout gets the packages the
   fetch step put there (worker.py, `install_fetched_packages`), so Lake finds every package at
   its revision and never needs to clone one.

Before step 1, on the host and outside the sandbox, `lake --version` runs in the checkout: elan
installs the Lean version lean-toolchain names if it is missing (elan is trusted, lean-toolchain
was checked by tasks/lean/versions.py, and no repository code runs); inside the sandbox elan's
folder is read-only, so a toolchain could not be installed there.

Each step runs in its own session, logs to a file of its own, and is stopped with its children
(its process group) when it outlives `timeout_s` or the caller is interrupted.
"""

from __future__ import annotations

import json
import logging
import signal
import subprocess
import sys
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path

from storage import atomic
from storage.errors import InputError
from tasks.lean.environment import private_env
from tasks.lean.sandbox import TIED, killed_by, python_worker_argv

from ..git import looks_transient
from ..process_group import stop_group
from .errors import TracingError
from .job import TraceJob

log = logging.getLogger(__name__)

PROJECT_ROOT = Path(__file__).resolve().parents[2]
FETCH_COMMAND = ("lake", "resolve-deps")
STOP_GRACE_S = 15.0  # after SIGTERM, how long a step (Ray, lake, lean) gets to stop before SIGKILL


def contained(
    bwrap: str | None, env: dict, cwd: Path, writable: list[Path], read_only: Sequence, *, network: bool
) -> Callable[[list[str]], list[str]]:
    """A function that puts a command under bubblewrap: Dojoflow, Python, the toolchain and
    `read_only` read-only, only `writable` (and the process's private folder, `env`'s HOME)
    writable, its own PID namespace, and the network only when `network`."""

    def wrap(cmd: list[str]) -> list[str]:
        return python_worker_argv(
            bwrap,
            cmd,
            read_only=[str(PROJECT_ROOT), *(str(Path(p).resolve()) for p in read_only)],
            writable=[str(p) for p in writable] + [env["HOME"]],
            cwd=str(cwd),
            env=env,
            network=network,
        )

    return wrap


def tail(path: Path, lines: int = 40) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def run_logged(cmd: list[str], cwd: Path, env: dict, log_path: Path, timeout_s: float | None) -> int | None:
    """Run `cmd` in a session of its own with its output in `log_path`; its exit status, with a
    process killed by a signal (also through bwrap's 128 + signal) as minus that signal, or None
    when it outlived `timeout_s` (then it and its children were stopped)."""
    with open(log_path, "w", encoding="utf-8") as log_f:
        log_f.write(f"# {datetime.now().isoformat()} {' '.join(cmd)} (cwd {cwd})\n")
        log_f.flush()
        proc = subprocess.Popen(
            cmd,
            cwd=str(cwd),
            env=env,
            stdout=log_f,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            rc = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            stop_group(proc, STOP_GRACE_S)
            return None
        except BaseException:
            stop_group(proc, STOP_GRACE_S)
            raise
    if TIED in cmd[:4] and rc > 128:  # under bwrap (through sandbox.py --tied): 128 + the signal (killed_by)
        rc = -killed_by(rc)
    return rc


def _timed_out(source: str, commit: str, timeout_s: float | None, log_path: Path) -> TracingError:
    return TracingError(
        source,
        commit,
        f"the trace did not finish within {timeout_s:.0f} s",
        "raise the timeout (mathlib-sized repositories take hours); a rerun with the "
        "same work folder reuses what was fetched and what lean-dojo cached",
        log_path=log_path,
    )


def install_toolchain(checkout: Path, env: dict) -> None:
    """`lake --version` in the checkout, on the host: elan installs the Lean version that
    lean-toolchain names if it is missing (see the module docstring). A failure is left to the
    fetch step, which reports it with its log."""
    try:
        subprocess.run(["lake", "--version"], cwd=str(checkout), env=env, capture_output=True, timeout=3600)
    except (OSError, subprocess.TimeoutExpired) as e:
        log.warning("`lake --version` in %s failed: %s", checkout, e)


def fetch_dependencies(
    checkout: Path,
    commit: str,
    source: str,
    *,
    bwrap: str | None,
    env: dict,
    private: Path,
    log_path: Path,
    timeout_s: float | None,
) -> None:
    """Step 1: `lake resolve-deps` in `checkout`, under bubblewrap with the network, writing
    only the checkout and `private` (its HOME and TMPDIR)."""
    install_toolchain(checkout, env)  # with the real HOME: elan's folder is found from it
    private.mkdir(parents=True, exist_ok=True)
    env = private_env(env, str(private))
    wrap = contained(bwrap, env, checkout, [checkout], (), network=True)
    log.info("fetching the dependencies of %s at %s; log: %s", source, commit[:12], log_path)
    rc = run_logged(wrap(list(FETCH_COMMAND)), checkout, env, log_path, timeout_s)
    if rc is None:
        raise _timed_out(source, commit, timeout_s, log_path)
    if rc != 0:
        last = tail(log_path)
        raise TracingError(
            source,
            commit,
            f"fetching the dependencies (`{' '.join(FETCH_COMMAND)}`) failed with exit status {rc}",
            "every package of lake-manifest.json must be reachable at its revision: run "
            f"`lake resolve-deps` in {checkout} to see the error",
            log_path=log_path,
            transient=looks_transient(last),
            log_tail=last,
        )


def run_worker(
    job: TraceJob, job_path: Path, env: dict, cwd: Path, log_path: Path, timeout_s: float | None, source: str, wrap
) -> dict:
    """Step 2: the tracing worker on `job` (wrapped by `wrap`, with no network); its result."""
    atomic.write_text(job_path, job.model_dump_json(indent=2))
    cmd = wrap([sys.executable, "-m", "tasks.tracing.worker", str(job_path)])
    log.info("tracing %s at %s; log: %s", source, job.commit[:12], log_path)
    rc = run_logged(cmd, cwd, env, log_path, timeout_s)
    if rc is None:
        raise _timed_out(source, job.commit, timeout_s, log_path)
    result_path = Path(job.result_path)
    result = json.loads(result_path.read_text()) if result_path.exists() else None
    if rc == 0 and result and result.get("ok") and (Path(job.export_dir) / "metadata.json").exists():
        return result
    raise _worker_failure(job, rc, result, source, log_path)


def _worker_failure(job: TraceJob, rc: int, result: dict | None, source: str, log_path: Path) -> Exception:
    last = tail(log_path)
    if result and result.get("input_error"):
        return InputError(source, result["message"], f"fix the repository and trace again (log: {log_path})")
    if rc < 0:
        try:
            sig = signal.Signals(-rc).name
        except ValueError:
            sig = f"signal {-rc}"
        return TracingError(
            source,
            job.commit,
            f"the tracing process was killed by {sig}"
            + (" (most likely out of memory)" if rc == -signal.SIGKILL else ""),
            "tracing needs much memory on large repositories (about 100 GB for mathlib): give "
            "it more, or lower num_procs",
            log_path=log_path,
            log_tail=last,
        )
    what = f"{result['error_type']}: {result['message']}" if result else f"the tracing process exited with {rc}"
    fix = "read the log; a rerun with the same work folder reuses what lean-dojo finished"
    if "lake build" in last or "lake build" in what:
        fix = (
            f"the repository must build with `lake build` at this commit: run it in {job.checkout} to see "
            "the error, or trace another commit"
        )
    return TracingError(
        source, job.commit, what[:2000], fix, log_path=log_path, transient=looks_transient(last + what), log_tail=last
    )
