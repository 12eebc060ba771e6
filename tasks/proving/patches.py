"""Patches that put found proofs into a repository's sources, in place of its `sorry`s.

For each repository, a clean checkout of the traced commit is made in a temporary folder
of our own (the user's working tree is never touched): the sample's repositories are
written by `storage.sample.write_sample_repositories` and must hash to the stored
commit; any other repository is cloned from its URL (or local path) and checked out at
the commit. In that copy, each proved theorem's tactic block (the text after its
`:= by`, up to the theorem's end, which holds the `sorry`) becomes the proof found,
which starts from the theorem's statement; `git diff` gives the patch, and
`git apply --check` on the clean checkout must accept it before the patch file is
written (atomically) as `<out>/<repository name>.patch`. Apply it in your checkout with
`git apply <file>`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections import defaultdict
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from storage import atomic
from storage.errors import InputError

from .records import SearchRecord

SAMPLE_URL_PREFIX = "https://dojoflow.invalid/samples/"
_GIT_ENV = {
    "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
    "GIT_CONFIG_NOSYSTEM": "1",
    "LC_ALL": "C",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_AUTHOR_NAME": "dojoflow",
    "GIT_AUTHOR_EMAIL": "dojoflow@invalid",
    "GIT_COMMITTER_NAME": "dojoflow",
    "GIT_COMMITTER_EMAIL": "dojoflow@invalid",
}


def _git(args: list[str], cwd: Path) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, env={**_GIT_ENV, "HOME": str(cwd)}, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed in {cwd}: {done.stderr.strip()[:400]}")
    return done.stdout


def clean_checkout(repository: dict, dest: Path) -> Path:
    """A clean checkout of `repository` (a store row) at its commit, under `dest`."""
    url, commit, name = repository["url"], repository["commit"], repository["name"]
    if url.startswith(SAMPLE_URL_PREFIX):
        from storage.sample import write_sample_repositories
        from storage.sample.generate import source_commit

        made = {p.name: p for p in write_sample_repositories(dest / "samples")}
        path = made.get(url[len(SAMPLE_URL_PREFIX) :])
        if path is None:
            raise InputError(url, "names no sample repository", "import the sample again (`dojoflow run`)")
        files = [f for f in path.rglob("*") if f.is_file() and ".git" not in f.relative_to(path).parts]
        found = source_commit({str(f.relative_to(path)): f.read_text() for f in files})
        if found != commit:
            raise InputError(
                name,
                f"the sample shipped with this Dojoflow is at {found[:12]}, the store holds {commit[:12]}",
                "re-import the sample with this version (`dojoflow import --replace`)",
            )
        return path
    source = repository.get("source_path") if repository.get("source") == "trace" else None
    path = dest / name
    try:
        _git(["clone", "--quiet", "--no-checkout", source or url, str(path)], dest)
        _git(["checkout", "--quiet", commit], path)
    except RuntimeError as e:
        raise InputError(
            url,
            f"cannot be checked out at {commit[:12]} ({e})",
            "make the repository reachable (its URL, or the local path it was traced from)",
        ) from e
    return path


def replace_proof(text: str, start: tuple[int, int], end: tuple[int, int], proof: list[str]) -> str:
    """`text` with the tactic block of the theorem at [start, end) (LeanDojo's 1-based line and
    column) replaced by `proof`, one tactic per line, indented two spaces past the theorem."""
    lines = text.split("\n")
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)
    begin = offsets[start[0] - 1] + start[1] - 1
    stop = offsets[end[0] - 1] + end[1] - 1
    region = text[begin:stop]
    at = region.find(":= by")
    if at < 0:
        raise InputError(
            region.split("\n")[0][:80],
            "has no `:= by` tactic block to put a proof in",
            "only tactic proofs (`:= by ...`) can be patched",
        )
    indent = " " * (start[1] - 1 + 2)
    body = "\n".join(indent + line for tactic in proof for line in tactic.split("\n"))
    return text[:begin] + region[: at + len(":= by")] + "\n" + body + text[stop:]


class Patch(BaseModel):
    """A checked patch written for one repository."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    repo_id: str = Field(description="The repository patched.")
    name: str = Field(description="The repository's name (the patch file is `<name>.patch`).")
    path: str = Field(description="The patch file.")
    theorems: tuple[str, ...] = Field(description="The theorems whose `sorry` it replaces, sorted.")


def write_patches(store, proofs: list[SearchRecord], out_dir: Path) -> list[Patch]:
    """One checked patch per repository holding proofs."""
    proofs = SearchRecord.all(proofs)
    positions = {
        (r["repo_id"], r["full_name"]): (tuple(r["start"]), tuple(r["end"]))
        for r in store.read_table(
            "theorems", sorted({p.repo_id for p in proofs}), columns=["repo_id", "full_name", "start", "end"]
        ).to_pylist()
    }
    by_repo: dict[str, list[SearchRecord]] = defaultdict(list)
    for p in proofs:
        by_repo[p.repo_id].append(p)
    written = []
    for repo_id, found in sorted(by_repo.items()):
        repository = store.repository(repo_id)
        with tempfile.TemporaryDirectory(prefix="dojoflow-patch-") as tmp:
            checkout = clean_checkout(repository, Path(tmp))
            by_file: dict[str, list[SearchRecord]] = defaultdict(list)
            for p in found:
                by_file[p.file_path].append(p)
            for file_path, items in by_file.items():
                source = checkout / file_path
                text = source.read_text()
                # Bottom-up, so earlier positions stay valid.
                for p in sorted(items, key=lambda p: positions[(repo_id, p.full_name)][0], reverse=True):
                    start, end = positions[(repo_id, p.full_name)]
                    text = replace_proof(text, start, end, list(p.proof))
                source.write_text(text)
            patch = _git(["diff", "--no-color", "--no-ext-diff"], checkout)
            _git(["checkout", "--quiet", "--", "."], checkout)
            candidate = Path(tmp) / "candidate.patch"
            candidate.write_text(patch)
            _git(["apply", "--check", str(candidate)], checkout)  # raises if the patch does not apply
            target = Path(out_dir) / f"{repository['name']}.patch"
            atomic.write_text(target, patch)
            shutil.rmtree(checkout, ignore_errors=True)
        theorems = sorted(p.full_name for p in found)
        written.append(Patch(repo_id=repo_id, name=repository["name"], path=str(target), theorems=theorems))
    return written
