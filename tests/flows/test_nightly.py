"""The nightly flow on the embedded Prefect server, with real git repositories:
nothing new finishes at once and says so; a failed retraining run records nothing."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from storage.errors import DojoflowError
from tasks.config import PipelineConfig
from tasks.watch import NightlyConfig, WatchedRepo, load_state, record_processed, state_path


def git(cwd: Path, *args: str) -> str:
    env = {"PATH": os.environ["PATH"], "HOME": str(cwd), "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", "-c", "user.name=T", "-c", "user.email=t@example.com", *args], cwd=cwd, env=env,
                          check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def lean_repo(tmp_path) -> Path:
    """A git repository that looks like a Lean project (tracing it needs a Lean toolchain)."""
    repo = tmp_path / "Lemmas"
    repo.mkdir()
    (repo / "lakefile.lean").write_text('import Lake\nopen Lake DSL\npackage Lemmas\nlean_lib Lemmas\n')
    (repo / "lean-toolchain").write_text("leanprover/lean4:v4.20.0\n")
    (repo / "Lemmas.lean").write_text("theorem t : 1 + 1 = 2 := rfl\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "init")
    return repo


def nightly_config(home: Path, *repos: WatchedRepo) -> NightlyConfig:
    # No trainers: these runs stop at ingestion, and validating SFT settings would import TRL.
    return NightlyConfig(watch=list(repos), home=str(home),
                         pipeline=PipelineConfig(name="nightly-test", sources=[], trainers={"sft": None}))


def run_nightly(config: NightlyConfig):
    """Run the flow; return its final state and its flow run id."""
    from flows.nightly import nightly

    state = nightly(config=config, return_state=True)
    return state, state.state_details.flow_run_id


def artifact_markdown(flow_run_id, key: str = "nightly-report") -> str:
    """The markdown of the run's artifact with this key, read back from the Prefect API.

    Plain REST: Prefect 3.8.8's `read_artifacts` sends null for the filters left out, which
    its server rejects (422), and an empty task-run filter leaves out flow-level artifacts.
    """
    import httpx
    from prefect.settings import PREFECT_API_URL

    body = {"artifacts": {"key": {"any_": [key]}, "flow_run_id": {"any_": [str(flow_run_id)]}}}
    found = httpx.post(f"{PREFECT_API_URL.value()}/artifacts/filter", json=body, timeout=30).raise_for_status().json()
    assert len(found) == 1, f"expected one {key!r} artifact of flow run {flow_run_id}, found {len(found)}"
    return found[0]["data"]


def test_nothing_changed_finishes_quickly_and_says_which_commits_were_checked(prefect, tmp_path, lean_repo):
    home = tmp_path / "home"
    local = WatchedRepo(url_or_path=str(lean_repo), branch="main")
    bare = tmp_path / "served" / "Other.git"
    git(tmp_path, "clone", "-q", "--bare", str(lean_repo), str(bare))
    remote = WatchedRepo(url_or_path=bare.as_uri(), branch="main", name="Other")
    head = git(lean_repo, "rev-parse", "HEAD")
    record_processed(home, [(local, head), (remote, head)], run_id="earlier")
    before = state_path(home).read_bytes()

    started = time.perf_counter()
    state, run_id = run_nightly(nightly_config(home, local, remote))
    elapsed = time.perf_counter() - started
    result = state.result()

    assert result["changed"] == {} and result["report"] is None
    assert result["checked"] == {local.key: head, remote.key: head}
    assert elapsed < 30, f"a night with nothing new took {elapsed:.1f} s"
    assert state_path(home).read_bytes() == before
    md = artifact_markdown(run_id)
    assert "nothing changed" in md and head[:12] in md and "Lemmas" in md and "Other" in md


def test_a_failed_retraining_run_records_no_commit_so_the_next_night_retries(prefect, tmp_path, lean_repo):
    from flows.nightly import nightly

    home = tmp_path / "home"
    repo = WatchedRepo(url_or_path=str(lean_repo), branch="main")
    # A new commit, so the curriculum subflow runs and traces it, which fails: no Lean toolchain
    # here (ToolchainMissingError); where one is installed, this toy project fails to build.
    with pytest.raises(DojoflowError) as e:
        nightly(config=nightly_config(home, repo))
    assert not e.value.transient
    assert not state_path(home).exists()
    assert load_state(home).commit_of(repo) is None


def test_an_unknown_branch_fails_the_run_after_checking_the_others(prefect, tmp_path, lean_repo):
    from flows.nightly import WatchCheckFailed

    home = tmp_path / "home"
    good = WatchedRepo(url_or_path=str(lean_repo), branch="main")
    bad = WatchedRepo(url_or_path=str(lean_repo), branch="no-such-branch", name="typo")
    record_processed(home, [(good, git(lean_repo, "rev-parse", "HEAD"))])
    state, run_id = run_nightly(nightly_config(home, good, bad))
    assert state.is_failed()
    with pytest.raises(WatchCheckFailed, match="typo: .*has no branch 'no-such-branch'"):
        state.result()
    md = artifact_markdown(run_id)
    assert "check failed" in md and "unchanged" in md
