"""Trace a Lean 4 repository with lean-dojo into a LeanDojo Benchmark export folder.

    trace_repository("https://github.com/yangky11/lean4-example", None, Path("out/example"), Path("work"))
    trace_repository("/path/to/my-lean-repo", "3f2a9c1", Path("out/mine"), Path("work"))

What happens, in order (the issue's `dojoflow trace URL_OR_PATH [--commit SHA]`):
1. The input is checked before anything slow (checkout.py): the commit must be hexadecimal; a
   local path must exist, be the root of a git repository, and hold a lakefile and
   lean-toolchain at that commit (`git rev-parse` resolves the commit, default HEAD). A remote
   url with no commit is resolved with `git ls-remote URL HEAD`.
2. `find_toolchain()` fails at once if lake, lean, git or lean-dojo is missing; bubblewrap must
   work, unless the user opted out (sandbox.unsafe_no_sandbox).
3. The commit is checked out with plain git into `work_dir/checkouts/` (local paths too: only
   committed files are traced, and the user's folder is never touched).
4. Fetch (steps.py): `lake resolve-deps` clones the packages of lake-manifest.json into the
   checkout's `.lake/packages/`, under bubblewrap WITH the network.
5. Build and trace (steps.py, worker.py): lean-dojo traces that checkout as a local repository
   (so it never calls the GitHub API), under bubblewrap WITHOUT the network, in a subprocess
   with its working directory and caches under `work_dir`, a minimal environment (no tokens or
   keys), and its log in `work_dir/logs/`. It converts the traced repo (convert.py) and writes
   the export into a temporary sibling of `out_dir`, renamed into place only when complete. A
   failure leaves no `out_dir` and raises an error that quotes the log's tail.

Network, exactly:
- elan downloads the Lean version named in lean-toolchain if it is not installed yet (on the
  host, before the fetch step: no repository code runs then).
- The fetch step: `git clone` of every package in lake-manifest.json, as `lake` always does,
  and whatever the lakefile's own code does at configuration time (it is sandboxed: only the
  checkout and a private folder are writable).
- Remote url: `git ls-remote` (only without a commit) and `git clone`.
Never: the build (`lake build`, ExtractData.lean, lean-dojo's Ray), which has its own empty
network namespace; the GitHub API (lean-dojo's `get_dependencies` is replaced by an offline
reading of lean-toolchain, `lean --githash` and lake-manifest.json, see worker.py; and
GITHUB_ACCESS_TOKEN is not passed on, which would make lean-dojo call the API at import);
lean-dojo's remote cache (DISABLE_REMOTE_CACHE=1); `lake exe cache get` (build_deps=True,
lean-dojo's default, builds dependencies from source: hours and tens of GB for mathlib).
One trace per (work_dir, commit) at a time; different commits may share a work_dir.

Resume: lean-dojo's cache lives in `work_dir/lean_dojo_cache`; a rerun with the same
work_dir after a finished trace skips the build and only converts again.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Sequence
from pathlib import Path

from storage import atomic
from storage.errors import InputError
from tasks.lean.environment import minimal_env, private_env

from ..lean.versions import check_version
from .checkout import (
    check_commit_format,
    check_lake_project_at,
    checkout_commit,
    commit_time,
    parse_source,
    resolve_local_commit,
    resolve_remote_head,
)
from .job import TraceJob, check_build_deps
from .steps import PROJECT_ROOT, contained, fetch_dependencies, run_worker
from .toolchain import find_toolchain

log = logging.getLogger(__name__)


def _check_out_dir(out_dir: Path) -> None:
    if out_dir.exists():
        if not out_dir.is_dir():
            raise InputError(out_dir, "exists and is not a folder", "pick another output folder")
        if any(out_dir.iterdir()) and not (out_dir / "metadata.json").exists():
            raise InputError(
                out_dir,
                "exists, is not empty and is not a LeanDojo export",
                "pick an empty or new output folder (an earlier export there would be replaced)",
            )


def trace_repository(
    url_or_path: str,
    commit: str | None,
    out_dir: Path,
    work_dir: Path,
    *,
    timeout_s: float | None = None,
    num_procs: int | None = None,
    extra_pythonpath: Sequence[str | Path] = (),
    build_deps: bool = True,
    sandbox=None,
) -> Path:
    """Trace `url_or_path` at `commit` (default: its HEAD) and write a LeanDojo export to `out_dir`.

    Returns `out_dir`, which appears complete or not at all (an earlier export there is
    replaced). `work_dir` holds checkouts, lean-dojo's cache, logs and job files; reuse it to
    resume. `num_procs` caps lean-dojo's parallelism (its NUM_PROCS; default: CPU count, at
    most 32); `extra_pythonpath` lists folders where lean-dojo is installed if it is not in
    this interpreter's environment. `sandbox` (tasks.lean.config.SandboxSettings or a dict of it,
    default its defaults): the fetch step and the worker (lean-dojo and the `lake build` it runs)
    run the repository's code, under bubblewrap (steps.py). `timeout_s` bounds each of the two
    steps. Raises InputError for bad input, ToolchainMissingError for missing programs,
    TracingError for a failed trace.
    """
    from tasks.lean.availability import contain
    from tasks.lean.config import SandboxSettings

    # Before any work: no bubblewrap and no opt-out is an InputError. No memory or CPU
    # limit: a trace takes hours and ~100 GB on mathlib; `timeout_s` bounds it.
    bwrap = contain(SandboxSettings.model_validate(sandbox or {}), None, None).bwrap
    source, commit = _checked_input(url_or_path, commit, build_deps, num_procs)
    out_dir, work_dir = Path(out_dir).resolve(), Path(work_dir).resolve()
    _check_out_dir(out_dir)
    if source.kind == "local":
        commit = resolve_local_commit(source, commit)
        check_lake_project_at(source, Path(source.location), commit)
    work_dir.mkdir(parents=True, exist_ok=True)
    # Under elan, versions depend on the folder's lean-toolchain: read them in the repository.
    toolchain = find_toolchain(
        cwd=Path(source.location) if source.kind == "local" else work_dir, pythonpath=extra_pythonpath
    )
    if source.kind == "remote" and commit is None:
        commit = resolve_remote_head(source)
    checkout, commit = checkout_commit(source, commit, work_dir / "checkouts")
    # lean-dojo's ExtractData.lean works for a known range of Lean versions only: refuse the rest
    # now, not after hours of `lake build` (tasks/lean/versions.py)
    check_version("tracing", f"{source.export_url}@{commit[:12]}", (checkout / "lean-toolchain").read_text())
    job = TraceJob(
        checkout=str(checkout),
        commit=commit,
        export_url=source.export_url,
        export_dir=str(out_dir),  # replaced by the staging folder below
        result_path=str(work_dir / "jobs" / f"{commit[:12]}.result.json"),
        commit_time=commit_time(checkout, commit),
        toolchain=toolchain.as_dict(),
        build_deps=build_deps,
    )
    result = _fetch_and_trace(job, out_dir, work_dir, bwrap, timeout_s, num_procs, extra_pythonpath)
    log.info("traced %s at %s: %s", source.export_url, commit[:12], result.get("counts"))
    return out_dir


def _checked_input(url_or_path: str, commit: str | None, build_deps: bool, num_procs: int | None):
    """The source and the commit (if given) of a trace, after the checks that need no git."""
    commit = check_commit_format(commit)
    check_build_deps(build_deps, where="build_deps")
    if num_procs is not None and (isinstance(num_procs, bool) or not isinstance(num_procs, int) or num_procs < 1):
        raise InputError(num_procs, "is not a positive number of processes", "pass 1 or more", where="num_procs")
    source = parse_source(url_or_path)
    if source.name == "lean4":
        raise InputError(
            url_or_path,
            "is Lean 4 itself, which lean-dojo cannot trace",
            "trace a repository that depends on Lean instead",
        )
    return source, commit


def _worker_env(work_dir: Path, key: str, num_procs: int | None, extra_pythonpath: Sequence) -> dict:
    """The tracing worker's environment: lean-dojo's settings, its folders under `work_dir`."""
    cache_dir, tmp_dir, run_dir = work_dir / "lean_dojo_cache", work_dir / "tmp" / key, work_dir / "run" / key
    shutil.rmtree(tmp_dir, ignore_errors=True)  # what a killed run of this commit left
    for d in (cache_dir, tmp_dir, run_dir, work_dir / "logs", work_dir / "jobs"):
        d.mkdir(parents=True, exist_ok=True)
    env_extra = {
        "PYTHONPATH": os.pathsep.join([*(str(Path(p).resolve()) for p in extra_pythonpath), str(PROJECT_ROOT)]),
        "CACHE_DIR": str(cache_dir),
        "TMP_DIR": str(tmp_dir),
        "DISABLE_REMOTE_CACHE": "1",
        "PYTHON_DOTENV_DISABLED": "1",  # lean-dojo calls load_dotenv() at import
        "PYTHONUNBUFFERED": "1",
    }
    if num_procs is not None:
        env_extra["NUM_PROCS"] = str(num_procs)
    return private_env(minimal_env(extra=env_extra), str(run_dir))


def _fetch_and_trace(
    job: TraceJob,
    out_dir: Path,
    work_dir: Path,
    bwrap: str | None,
    timeout_s: float | None,
    num_procs: int | None,
    extra_pythonpath: Sequence,
) -> dict:
    """The two sandboxed steps (steps.py): fetch with the network, then build and trace without."""
    key = job.commit[:12]
    env = _worker_env(work_dir, key, num_procs, extra_pythonpath)
    logs, jobs, checkout = work_dir / "logs", work_dir / "jobs", Path(job.checkout)
    Path(job.result_path).unlink(missing_ok=True)
    fetch_dependencies(
        checkout,
        job.commit,
        job.export_url,
        bwrap=bwrap,
        env=minimal_env(),
        private=work_dir / "run" / f"{key}-fetch",
        log_path=logs / f"fetch-{key}.log",
        timeout_s=timeout_s,
    )
    with atomic.atomic_path(out_dir) as staging:
        job = job.model_copy(update={"export_dir": str(staging)})
        run_dir = Path(env["HOME"])
        try:
            wrap = contained(bwrap, env, run_dir, [work_dir, staging.parent], extra_pythonpath, network=False)
            return run_worker(
                job, jobs / f"{key}.json", env, run_dir, logs / f"trace-{key}.log", timeout_s, job.export_url, wrap
            )
        finally:
            # a worker killed while writing leaves its own temporary sibling of `staging`
            for p in staging.parent.glob(f"{staging.name}{atomic.TMP_MARK}*"):
                shutil.rmtree(p, ignore_errors=True) if p.is_dir() else p.unlink(missing_ok=True)
