"""Pinning sources to commits before ingestion, so an ingest cache key names content:
a moved branch or HEAD is a new key, a pinned commit needs no network."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from storage.errors import InputError
from tasks.config import SourceConfig
from tasks.ingest import pin_source, source_fingerprint
from tasks.tracing.errors import TracingError


def git(cwd: Path, *args: str) -> str:
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@x",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@x",
        "PATH": "/usr/bin:/bin:/usr/local/bin",
        "HOME": str(cwd),
    }
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def repo(tmp_path) -> Path:
    r = tmp_path / "Lemmas"
    r.mkdir()
    git(r, "init", "-q", "-b", "main")
    (r / "lakefile.lean").write_text("-- a lake project\n")
    git(r, "add", "-A")
    git(r, "commit", "-q", "-m", "one")
    return r


def test_a_local_repository_is_pinned_to_its_head_and_a_new_commit_is_a_new_key(repo):
    first = pin_source(SourceConfig(repo=str(repo)))
    assert first.commit == git(repo, "rev-parse", "HEAD")
    (repo / "More.lean").write_text("theorem t : True := trivial\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "two")
    second = pin_source(SourceConfig(repo=str(repo)))
    assert second.commit == git(repo, "rev-parse", "HEAD") != first.commit
    assert source_fingerprint(second) != source_fingerprint(first)
    # an explicit commit stays that commit, however HEAD moves
    assert pin_source(SourceConfig(repo=str(repo), commit=first.commit[:10])).commit == first.commit


def test_a_remote_without_a_commit_is_pinned_to_its_head_with_ls_remote_and_with_one_needs_no_network(repo, tmp_path):
    url = f"file://{repo}"
    assert pin_source(SourceConfig(repo=url)).commit == git(repo, "rev-parse", "HEAD")
    gone = f"file://{tmp_path}/gone.git"
    with pytest.raises(TracingError, match="ls-remote"):
        pin_source(SourceConfig(repo=gone))
    # a pinned commit is not looked up: a cached ingest of it works offline
    assert pin_source(SourceConfig(repo=gone, commit="ab" * 20)).commit == "ab" * 20


def test_sources_that_cannot_be_pinned_say_why(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        pin_source(SourceConfig(repo=str(tmp_path / "missing")))
    with pytest.raises(InputError, match="not a commit hash"):
        pin_source(SourceConfig(repo="https://example.invalid/x", commit="main"))
    with pytest.raises(InputError, match="no pinned commit"):
        source_fingerprint(SourceConfig(repo="https://example.invalid/x"))
    sample = SourceConfig(sample="NatBasics")
    assert pin_source(sample) is sample and Path(sample.export_path).is_dir()
