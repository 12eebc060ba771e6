"""The tracing subprocess: import lean-dojo, trace one checkout, write its LeanDojo export.

`trace_repository` (trace.py) starts it as `python -m tasks.tracing.worker JOB.json`, in a
folder of its own, with a minimal environment that already holds lean-dojo's settings
(CACHE_DIR, TMP_DIR, DISABLE_REMOTE_CACHE=1, ...). Running lean-dojo in a child process
keeps its side effects out of the caller: it resets loguru's handlers at import, changes
the working directory while tracing, starts Ray, and can use tens of GB of memory.
To debug a failed trace, run the same command by hand: the job file stays in the work folder.

What the child changes in lean-dojo 4.20.0, and why (nothing else is patched):
`LeanGitRepo.get_dependencies(path)` asks the GitHub API for the lean4 repository (to turn
the version in lean-toolchain into a commit) and, for every package in lake-manifest.json,
builds a `LeanGitRepo` that queries GitHub and downloads that package's lean-toolchain, even
for a local repository. It is replaced, for calls with a `path` (all calls made while
tracing), by a version that reads the same facts from disk: the lean4 commit from
`lean --githash` of the toolchain the repository selects, and each package's url, rev and
lean-toolchain from lake-manifest.json and .lake/packages/<name>/. The resulting
`LeanGitRepo` objects carry url, commit, lean_version and repo_type as lean-dojo's would,
and `repo=None` (no GitHub handle), which tracing never uses.

`LeanGitRepo.clone_and_checkout()` (lean.py: `Repo.clone_from(self.url, ...)`, then checkout of
the commit), which lean-dojo's `_trace` calls in its temporary folder before `lake build`, is
wrapped for a local repository: after lean-dojo's own clone, the packages that the fetch step
(tasks/tracing/steps.py) put into the checkout's `.lake/packages/` are copied into the clone, since
a git clone leaves out what git does not track. The build then runs without the network, and
Lake finds every package of lake-manifest.json at its revision, so it clones none
(Lake's `materializeGit`: an existing package folder is only checked out at its revision).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import traceback
from pathlib import Path

from storage import atomic
from storage.errors import InputError
from tasks.lean.dojo_repo import LEAN_DOJO_VERSION, bare_repo, is_supported_lean_dojo

from .convert import build_export, write_export
from .job import TraceJob

_HEX40 = re.compile(r"^[0-9a-f]{40}$")


# -- offline get_dependencies -----------------------------------------------------------
def lean4_commit(root: Path) -> str:
    """The lean4 commit of the toolchain that `root`'s lean-toolchain selects (via elan), or "".

    On "" the caller records the version tag (e.g. "v4.9.0") instead; only Lean 4's own
    theorems would carry it, and those are left out of exports.
    """
    try:
        res = subprocess.run(
            ["lean", "--githash"], check=False, capture_output=True, text=True, cwd=str(root), timeout=300
        )
        githash = res.stdout.strip()
        if res.returncode == 0 and _HEX40.match(githash):
            return githash
    except (OSError, subprocess.TimeoutExpired):
        pass
    return ""


def _toolchain_version(ld_lean, path: Path, default: str | None) -> str | None:
    if path.exists():
        return ld_lean.get_lean4_version_from_config(path.read_text())
    return default


def offline_dependencies(ld_lean, root: Path) -> dict:
    """What `LeanGitRepo.get_dependencies(root)` returns, read from disk only."""
    root = Path(root)
    lean_version = _toolchain_version(ld_lean, root / "lean-toolchain", None)
    if lean_version is None:
        raise InputError(root / "lean-toolchain", "is missing", "a Lake project names its Lean version there")
    deps = {
        "lean4": bare_repo(
            ld_lean, ld_lean.LEAN4_URL, lean4_commit(root) or lean_version, "latest", ld_lean.RepoType.GITHUB
        )
    }
    manifest_path = root / "lake-manifest.json"
    if not manifest_path.exists():
        return deps  # lake writes a manifest when there are dependencies; none here
    manifest = json.loads(manifest_path.read_text())
    for pkg in manifest.get("packages", []):
        if "git" in pkg and isinstance(pkg["git"], dict):  # manifest format before Lean v4.3
            pkg = {**pkg["git"], "type": "git"}
        if "path" in pkg and isinstance(pkg["path"], dict):
            pkg = {**pkg["path"], "type": "path"}
        name = pkg.get("name", "?")
        if pkg.get("type", "git") != "git" or "url" not in pkg:
            raise InputError(
                manifest_path,
                f"package {name!r} is a local (path) dependency",
                "lean-dojo traces only git dependencies: publish it in a git repository and `require` it from there",
            )
        url = ld_lean.normalize_url(pkg["url"])
        repo_type = ld_lean.RepoType.GITHUB if url.startswith("https://github.com/") else ld_lean.RepoType.REMOTE
        version = _toolchain_version(ld_lean, root / ".lake" / "packages" / name / "lean-toolchain", lean_version)
        deps[name] = bare_repo(ld_lean, url, pkg["rev"], version, repo_type)
    return deps


def install_offline_dependencies(ld_lean) -> None:
    """Replace LeanGitRepo.get_dependencies for calls with a path (see the module docstring)."""
    cls = ld_lean.LeanGitRepo
    if getattr(cls.get_dependencies, "_dojoflow_offline", False):
        return
    original = cls.get_dependencies

    def get_dependencies(self, path=None):
        if path is None:
            return original(self, path)
        return offline_dependencies(ld_lean, Path(path))

    get_dependencies._dojoflow_offline = True
    cls.get_dependencies = get_dependencies


# -- the fetched packages ----------------------------------------------------------------
PACKAGES_DIR = Path(".lake") / "packages"  # lake-manifest.json's `packagesDir` since Lean v4.3 (lean-dojo's `_trace`)


def copy_fetched_packages(checkout: Path, clone: Path) -> None:
    """The checkout's fetched `.lake/packages/` (each package a git clone) into `clone`."""
    fetched = Path(checkout) / PACKAGES_DIR
    if fetched.is_dir():
        shutil.copytree(fetched, Path(clone) / PACKAGES_DIR, symlinks=True, dirs_exist_ok=True)


def install_fetched_packages(ld_lean) -> None:
    """Wrap LeanGitRepo.clone_and_checkout for local repositories (see the module docstring)."""
    cls = ld_lean.LeanGitRepo
    if getattr(cls.clone_and_checkout, "_dojoflow_fetched", False):
        return
    original = cls.clone_and_checkout

    def clone_and_checkout(self):
        original(self)
        if self.repo_type == ld_lean.RepoType.LOCAL:
            copy_fetched_packages(Path(self.url), Path(self.name))  # lean-dojo clones into ./<name>

    clone_and_checkout._dojoflow_fetched = True
    cls.clone_and_checkout = clone_and_checkout


# -- the job -----------------------------------------------------------------------------
def run_job(job: TraceJob) -> dict:
    import lean_dojo
    from lean_dojo.data_extraction import lean as ld_lean

    if not is_supported_lean_dojo(lean_dojo.__version__):
        raise RuntimeError(
            f"lean-dojo {lean_dojo.__version__} is installed; Dojoflow is written against "
            f"{LEAN_DOJO_VERSION}: pip install 'lean-dojo=={LEAN_DOJO_VERSION}'"
        )
    install_offline_dependencies(ld_lean)
    install_fetched_packages(ld_lean)
    repo = lean_dojo.LeanGitRepo(job.checkout, job.commit)
    # dst_dir=None: the traced repo stays in lean-dojo's cache (under our work folder),
    # which a rerun reuses instead of building again.
    traced_repo = lean_dojo.trace(repo, build_deps=job.build_deps)
    export = build_export(
        traced_repo,
        url=job.export_url,
        commit=job.commit,
        leandojo_version=lean_dojo.__version__,
        lean_version=traced_repo.repo.lean_version,
        commit_time=job.commit_time,
        toolchain=job.toolchain,
    )
    write_export(export, Path(job.export_dir))
    return {"counts": export.counts(), "warnings": len(export.warnings)}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m tasks.tracing.worker JOB.json", file=sys.stderr)
        return 2
    job = TraceJob.model_validate_json(Path(argv[0]).read_text())
    result_path = Path(job.result_path)
    try:
        result = {"ok": True, **run_job(job)}
        code = 0
    except Exception as e:  # noqa: BLE001  (reported to the parent, which raises a typed error)
        traceback.print_exc()
        result = {
            "ok": False,
            "error_type": type(e).__name__,
            "message": str(e),
            "input_error": isinstance(e, InputError),
            "traceback": traceback.format_exc(),
        }
        code = 1
    atomic.write_text(result_path, json.dumps(result, indent=2, default=str))
    return code


if __name__ == "__main__":
    sys.exit(main())
