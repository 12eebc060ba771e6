"""Trace a Lean 4 repository with lean-dojo into a LeanDojo Benchmark export folder.

    trace_repository("https://github.com/yangky11/lean4-example", None, Path("out/example"), Path("work"))
    trace_repository("/path/to/my-lean-repo", "3f2a9c1", Path("out/mine"), Path("work"))

What happens, in order (the issue's `dojoflow trace URL_OR_PATH [--commit SHA]`):
1. The input is checked before anything slow: the commit must be hexadecimal; a local path
   must exist, be the root of a git repository, and hold a lakefile and lean-toolchain at
   that commit (`git rev-parse` resolves the commit, default HEAD). A remote url with no
   commit is resolved with `git ls-remote URL HEAD`.
2. `find_toolchain()` fails at once if lake, lean, git or lean-dojo is missing.
3. The commit is checked out with plain git into `work_dir/checkouts/` (local paths too: only
   committed files are traced, and the user's folder is never touched). lean-dojo then traces
   that checkout as a local repository, so it never calls the GitHub API.
4. lean-dojo runs in a subprocess (tasks/tracing/worker.py) with its working directory and
   caches under `work_dir`, a minimal environment (no tokens or keys), and its log in
   `work_dir/logs/`. The subprocess converts the traced repo (convert.py) and writes the
   export into a temporary sibling of `out_dir`, which is renamed into place only when
   complete. A failure leaves no `out_dir` and raises an error that quotes the log's tail.

Network, exactly:
- Local path whose lake-manifest.json lists no packages, with its Lean toolchain installed:
  none.
- Local path with packages (std, mathlib, ...): lean-dojo builds in a fresh clone, so
  `lake build` git-clones every package in lake-manifest.json, as `lake` always does.
- elan downloads the Lean version named in lean-toolchain if it is not installed yet.
- Remote url: `git ls-remote` (only without a commit) and `git clone`, plus the above.
Never: the GitHub API (lean-dojo's `get_dependencies` is replaced by an offline reading of
lean-toolchain, `lean --githash` and lake-manifest.json, see worker.py; and GITHUB_ACCESS_TOKEN
is not passed on, which would make lean-dojo call the API at import), lean-dojo's remote
cache (DISABLE_REMOTE_CACHE=1), `lake exe cache get` (build_deps=True, lean-dojo's default,
builds dependencies from source: hours and tens of GB for mathlib).
One trace per (work_dir, commit) at a time; different commits may share a work_dir.

Resume: lean-dojo's cache lives in `work_dir/lean_dojo_cache`; a rerun with the same
work_dir after a finished trace skips the build and only converts again.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from storage import atomic
from storage.errors import InputError
from tasks.lean.sandbox import TIED, killed_by, private_env, python_worker_argv  # stdlib only: no import cycle

from ..git import (
    GitFailed,
    git_message,
    is_remote,
    looks_transient,
    normalize_url,
    refuse_credentials,
    remote_ref,
    repo_name,
    run_git,
    run_git_network,
)
from ..lean.versions import check_version
from .errors import TracingError
from .job import TraceJob, check_build_deps
from .toolchain import find_toolchain, minimal_env

log = logging.getLogger(__name__)

PROJECT_ROOT = Path(__file__).resolve().parents[2]
_HEX_RE = re.compile(r"^[0-9a-fA-F]{4,40}$")
GIT_TIMEOUT_S = 3600.0


@dataclass(frozen=True)
class RepoSource:
    """What the user named: a local repository or a remote url."""

    kind: str  # "local" | "remote"
    location: str  # what git clones from: an absolute path or the url as given
    export_url: str  # the url recorded in the export
    name: str


def check_commit_format(commit: str | None) -> str | None:
    """None, or the commit lower-cased if it looks like a (possibly short) hash."""
    if commit is None:
        return None
    c = commit.strip()
    if not _HEX_RE.match(c):
        raise InputError(
            commit,
            "is not a commit hash (expected 4 to 40 hexadecimal characters)",
            "pass a commit hash. For a branch or tag, resolve it first: `git rev-parse NAME` in a "
            "local repository, `git ls-remote URL NAME` for a remote one",
            where="commit",
        )
    return c.lower()


# -- git ------------------------------------------------------------------------------------
def _git(args: list[str], cwd: Path | None = None, timeout: float = 120.0) -> subprocess.CompletedProcess:
    return run_git(args, cwd=cwd, timeout=timeout)


def _git_network(args: list[str], source: RepoSource, commit: str | None, cwd: Path | None = None) -> str:
    """A git command that talks to a remote; failures become TracingError (transient if network)."""
    try:
        return run_git_network(args, cwd=cwd, timeout=GIT_TIMEOUT_S).stdout
    except GitFailed as e:
        raise _tracing_error(e, source, commit) from None


def _tracing_error(e: GitFailed, source: RepoSource, commit: str | None) -> TracingError:
    fix = (
        "the network failed; try again"
        if e.transient
        else "check the url (and that the repository is public: private repositories are traced "
        "from a local clone, since no credentials reach git here; docs/git-and-credentials.md)"
    )
    return TracingError(source.export_url, commit, str(e), fix, transient=e.transient)


def parse_source(url_or_path: str) -> RepoSource:
    """Classify and check the user's input (a url, or a local path that must be a git root)."""
    if not isinstance(url_or_path, str) or not url_or_path.strip():
        raise InputError(repr(url_or_path), "is empty", "pass a git url or the path of a local Lean repository")
    refuse_credentials(url_or_path, "repository url")
    if is_remote(url_or_path):
        url = normalize_url(url_or_path)
        return RepoSource("remote", url_or_path.strip(), url, repo_name(url))
    path = Path(url_or_path).expanduser().resolve()
    if not path.exists():
        raise InputError(
            url_or_path,
            "does not exist",
            "pass the path of a local Lean repository (a git repository with a lakefile) or a git url",
        )
    if not path.is_dir():
        raise InputError(url_or_path, "is not a folder", "pass the root folder of a local Lean repository")
    res = _git(["rev-parse", "--show-toplevel"], cwd=path)
    if res.returncode != 0:
        raise InputError(
            url_or_path,
            f"is not a git repository ({git_message(res.stderr)})",
            "tracing needs a commit: run `git init && git add -A && git commit -m init` there, "
            "or pass the root of the repository",
        )
    top = Path(res.stdout.strip()).resolve()
    if top != path:
        raise InputError(
            url_or_path,
            f"is inside the git repository {top}, not its root",
            f"pass {top} (the folder with the lakefile and lean-toolchain)",
        )
    return RepoSource("local", str(path), str(path), path.name)


def resolve_local_commit(source: RepoSource, commit: str | None) -> str:
    ref = commit or "HEAD"
    res = _git(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], cwd=Path(source.location))
    if res.returncode != 0:
        if commit is None:
            raise InputError(source.location, "has no commits", "commit the repository's files first")
        raise InputError(
            commit,
            f"is not a commit of {source.location} (or is an ambiguous prefix)",
            "pass a commit of that repository (`git log` lists them); a longer prefix if ambiguous",
            where="commit",
        )
    return res.stdout.strip()


def check_lake_project_at(source: RepoSource, repo_dir: Path, commit: str) -> None:
    """The commit must hold a lakefile (lean or toml) and a lean-toolchain at its root."""

    def has(name: str) -> bool:
        return _git(["cat-file", "-e", f"{commit}:{name}"], cwd=repo_dir).returncode == 0

    if not (has("lakefile.lean") or has("lakefile.toml")):
        raise InputError(
            source.export_url,
            f"has no lakefile.lean or lakefile.toml at commit {commit[:12]}",
            "trace a Lake project (Lean 4): its root holds a lakefile and a lean-toolchain file",
        )
    if not has("lean-toolchain"):
        raise InputError(
            source.export_url,
            f"has no lean-toolchain file at commit {commit[:12]}",
            "add one naming the Lean version, e.g. `leanprover/lean4:v4.9.0`, and commit it",
        )


def resolve_remote_head(source: RepoSource) -> str:
    try:
        head = remote_ref(source.location, "HEAD", timeout=GIT_TIMEOUT_S)
    except GitFailed as e:
        raise _tracing_error(e, source, None) from None
    if head is not None:
        return head
    raise TracingError(
        source.export_url, None, "`git ls-remote URL HEAD` returned no HEAD", "pass the commit to trace explicitly"
    )


def _is_clean_checkout(path: Path, commit: str) -> bool:
    if not (path / ".git").exists():
        return False
    head = _git(["rev-parse", "HEAD"], cwd=path)
    status = _git(["status", "--porcelain", "--untracked-files=no"], cwd=path)
    return (
        head.returncode == 0 and head.stdout.strip() == commit and status.returncode == 0 and not status.stdout.strip()
    )


def checkout_commit(source: RepoSource, commit: str, checkouts: Path) -> tuple[Path, str]:
    """A clean checkout of `commit` under `checkouts/<sha12>/<name>`; returns it and the full hash.

    Reused when a previous run left it intact; otherwise cloned into a temporary sibling and
    renamed, so a killed clone is never mistaken for a checkout.
    """
    full = commit if len(commit) == 40 else None
    if full is not None:
        dest = checkouts / full[:12] / source.name
        if _is_clean_checkout(dest, full):
            return dest, full
    checkouts.mkdir(parents=True, exist_ok=True)
    tmp = atomic.temp_sibling(checkouts / f"clone-{commit[:12]}")
    try:
        if source.kind == "remote":
            _git_network(["clone", "--no-checkout", "--quiet", "--", source.location, str(tmp)], source, commit)
        else:
            res = _git(["clone", "--no-checkout", "--quiet", "--", source.location, str(tmp)], timeout=GIT_TIMEOUT_S)
            if res.returncode != 0:
                raise TracingError(
                    source.location,
                    commit,
                    f"`git clone` of the local repository failed: {git_message(res.stderr)}",
                    "check that the repository is readable",
                )
        res = _git(["rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}"], cwd=tmp)
        if res.returncode != 0 and source.kind == "remote" and len(commit) == 40:
            # A commit no branch or tag reaches: most hosts (GitHub included) serve it by hash.
            _git_network(["fetch", "--quiet", "origin", commit], source, commit, cwd=tmp)
            res = _git(["rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}"], cwd=tmp)
        if res.returncode != 0:
            raise InputError(
                commit,
                f"is not a commit of {source.export_url}",
                "pass a commit of that repository (a full hash if it is on no branch)",
                where="commit",
            )
        full = res.stdout.strip()
        check_lake_project_at(source, tmp, full)
        co = _git(["checkout", "--quiet", "--detach", full], cwd=tmp, timeout=GIT_TIMEOUT_S)
        if co.returncode != 0:
            raise TracingError(
                source.export_url,
                full,
                f"`git checkout` failed: {co.stderr.strip()[-1000:]}",
                "check the disk space of the work folder",
            )
        dest = checkouts / full[:12] / source.name
        if dest.exists():
            shutil.rmtree(dest)
        dest.parent.mkdir(parents=True, exist_ok=True)
        os.replace(tmp, dest)
        return dest, full
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def commit_time(repo_dir: Path, commit: str) -> str | None:
    res = _git(["show", "-s", "--format=%cI", commit], cwd=repo_dir)
    if res.returncode != 0:
        return None
    return res.stdout.strip() or None


# -- the worker process ------------------------------------------------------------------------
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


def _tail(path: Path, lines: int = 40) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def _kill_group(proc: subprocess.Popen) -> None:
    """Stop the worker and what it started (Ray, lake, lean): its own process group."""
    for sig, wait in ((signal.SIGTERM, 15), (signal.SIGKILL, 15)):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def _contained(bwrap: str | None, env: dict, run_dir: Path, writable: list[Path], pythonpath: Sequence):
    """The tracing worker's command under bubblewrap: Dojoflow, Python, lean-dojo and the
    toolchain read-only; only the work folder and the export's folder writable; its own
    PID namespace; the network kept, since lean-dojo's `lake build` clones the
    repository's packages in the same call (fetching first and building offline is not
    done: docs/lean-backends.md, "Sandbox")."""

    def wrap(cmd: list[str]) -> list[str]:
        return python_worker_argv(
            bwrap,
            cmd,
            read_only=[str(PROJECT_ROOT), *(str(Path(p).resolve()) for p in pythonpath)],
            writable=[str(p) for p in writable],
            cwd=str(run_dir),
            env=env,
            network=True,
        )

    return wrap


def _run_worker(
    job: TraceJob, job_path: Path, env: dict, cwd: Path, log_path: Path, timeout_s: float | None, source: str, wrap
) -> dict:
    atomic.write_text(job_path, job.model_dump_json(indent=2))
    cmd = wrap([sys.executable, "-m", "tasks.tracing.worker", str(job_path)])
    log.info("tracing %s at %s; log: %s", source, job.commit[:12], log_path)
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
            _kill_group(proc)
            raise TracingError(
                source,
                job.commit,
                f"the trace did not finish within {timeout_s:.0f} s",
                "raise the timeout (mathlib-sized repositories take hours); a rerun with the "
                "same work folder reuses what lean-dojo cached",
                log_path=log_path,
            ) from None
        except BaseException:
            _kill_group(proc)
            raise
    result_path = Path(job.result_path)
    result = json.loads(result_path.read_text()) if result_path.exists() else None
    if rc == 0 and result and result.get("ok") and (Path(job.export_dir) / "metadata.json").exists():
        return result
    tail = _tail(log_path)
    if result and result.get("input_error"):
        raise InputError(source, result["message"], f"fix the repository and trace again (log: {log_path})")
    if TIED in cmd[:4] and rc > 128:  # under bwrap (through sandbox.py --tied): 128 + the signal (killed_by)
        rc = -killed_by(rc)
    if rc < 0:
        try:
            sig = signal.Signals(-rc).name
        except ValueError:
            sig = f"signal {-rc}"
        raise TracingError(
            source,
            job.commit,
            f"the tracing process was killed by {sig}"
            + (" (most likely out of memory)" if rc == -signal.SIGKILL else ""),
            "tracing needs much memory on large repositories (about 100 GB for mathlib): give "
            "it more, or lower num_procs",
            log_path=log_path,
            log_tail=tail,
        )
    what = f"{result['error_type']}: {result['message']}" if result else f"the tracing process exited with {rc}"
    fix = "read the log; a rerun with the same work folder reuses what lean-dojo finished"
    if "lake build" in tail or "lake build" in what:
        fix = (
            f"the repository must build with `lake build` at this commit: run it in {job.checkout} to see "
            "the error, or trace another commit"
        )
    raise TracingError(
        source, job.commit, what[:2000], fix, log_path=log_path, transient=looks_transient(tail + what), log_tail=tail
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
    this interpreter's environment. `sandbox` (tasks.lean.config.SandboxSettings or a dict of it, default
    its defaults): the worker, lean-dojo and the `lake build` it runs are the repository's
    code, and run under bubblewrap (see `_contained`). Raises InputError for bad input,
    ToolchainMissingError for missing programs, TracingError for a failed trace.
    """
    from tasks.lean.availability import contain
    from tasks.lean.config import SandboxSettings

    # Before any work: no bubblewrap and no opt-out is an InputError. No memory or CPU
    # limit: a trace takes hours and ~100 GB on mathlib; `timeout_s` bounds it.
    limits = contain(SandboxSettings.model_validate(sandbox or {}), None, None)
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
    key = commit[:12]
    cache_dir, tmp_dir, run_dir = work_dir / "lean_dojo_cache", work_dir / "tmp" / key, work_dir / "run" / key
    logs, jobs = work_dir / "logs", work_dir / "jobs"
    shutil.rmtree(tmp_dir, ignore_errors=True)  # what a killed run of this commit left
    for d in (cache_dir, tmp_dir, run_dir, logs, jobs):
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
    env = private_env(minimal_env(extra=env_extra), str(run_dir))
    result_path = jobs / f"{key}.result.json"
    result_path.unlink(missing_ok=True)

    with atomic.atomic_path(out_dir) as staging:
        job = TraceJob(
            checkout=str(checkout),
            commit=commit,
            export_url=source.export_url,
            export_dir=str(staging),
            result_path=str(result_path),
            commit_time=commit_time(checkout, commit),
            toolchain=toolchain.as_dict(),
            build_deps=build_deps,
        )
        try:
            wrap = _contained(limits.bwrap, env, run_dir, [work_dir, staging.parent], extra_pythonpath)
            result = _run_worker(
                job, jobs / f"{key}.json", env, run_dir, logs / f"trace-{key}.log", timeout_s, source.export_url, wrap
            )
        finally:
            # a worker killed while writing leaves its own temporary sibling of `staging`
            for p in staging.parent.glob(f"{staging.name}{atomic.TMP_MARK}*"):
                shutil.rmtree(p, ignore_errors=True) if p.is_dir() else p.unlink(missing_ok=True)
    log.info("traced %s at %s: %s", source.export_url, key, result.get("counts"))
    return out_dir
