"""The nightly flow on the embedded Prefect server, with real git repositories.

No Lean toolchain exists here. Tests that trace do it through the real tracing path
(tasks/tracing: checks, checkout, worker subprocess, export, import) with the test doubles
of tests/tasks/test_tracing.py at the process boundary: `lake` and `lean` scripts on PATH,
and a `lean_dojo` package whose `trace` returns built objects, or fails when the traced
commit holds a FAIL_TRACE file. Their names say "lean_dojo_double".

    .venv/bin/python -m pytest tests/flows/test_nightly.py -q -p no:cacheprovider
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from prefect.settings import PREFECT_API_URL

from storage.errors import DojoflowError
from tasks.config import PipelineConfig
from tasks.watch import (
    NightlyConfig,
    RetrainingFailed,
    WatchCheckFailed,
    WatchedRepo,
    load_state,
    record_processed,
    state_path,
)
from tests.tasks.test_tracing import MANIFEST, fake_lean_bin, fake_lean_dojo_package, make_lean_repo

BUILD_ERROR = "lake build failed: Alpha/Basic.lean:3:2: unknown identifier 'foo'"


def git(cwd: Path, *args: str) -> str:
    env = {"PATH": os.environ["PATH"], "HOME": str(cwd), "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(
        ["git", "-c", "user.name=T", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false", *args],
        cwd=cwd,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def commit_file(repo: Path, name: str, text: str) -> str:
    (repo / name).parent.mkdir(parents=True, exist_ok=True)
    (repo / name).write_text(text)
    git(repo, "add", name)
    git(repo, "commit", "-q", "-m", f"add {name}")
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture
def lean_repo(tmp_path) -> Path:
    """A git repository that looks like a Lean project (used where nothing is traced)."""
    repo = tmp_path / "Lemmas"
    repo.mkdir()
    (repo / "lakefile.lean").write_text("import Lake\nopen Lake DSL\npackage Lemmas\nlean_lib Lemmas\n")
    (repo / "lean-toolchain").write_text("leanprover/lean4:v4.20.0\n")
    (repo / "Lemmas.lean").write_text("theorem t : 1 + 1 = 2 := rfl\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "init")
    return repo


@pytest.fixture
def lean_dojo_double(tmp_path, monkeypatch):
    """Tracing succeeds without Lean: test-double `lake`/`lean` on PATH and the test-double
    `lean_dojo` package on the tracing worker's PYTHONPATH, through the pipeline's own
    `tracing.extra_pythonpath` setting (`make.tracing`). Returns a function that makes a
    Lake-shaped git repository (branch main) and returns its path."""
    pkgs = fake_lean_dojo_package(tmp_path / "lean-dojo-double")
    bin_dir = fake_lean_bin(tmp_path / "lean-bin")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")

    def make(name: str) -> Path:
        path = tmp_path / "repos" / name
        make_lean_repo(path, {"lake-manifest.json": json.dumps(MANIFEST)})
        git(path, "branch", "-M", "main")
        return path

    make.tracing = {"extra_pythonpath": [str(pkgs)], "num_procs": 1}
    return make


@pytest.fixture
def echo_trainer():
    """The torch-free test trainer `echo` (tests/echo_trainer.py, from its own previous
    checkpoint): a night is asserted to train on its new commit and record it, not how well."""
    import dataclasses

    from tasks.trainers import registry
    from tests.echo_trainer import ECHO

    registry.register(dataclasses.replace(ECHO, starts_from=None))
    yield {"sft": None, "echo": {}}
    registry.unregister("echo")


def nightly_config(home: Path, *repos: WatchedRepo, trainers: dict | None = None, **pipeline) -> NightlyConfig:
    # Without `trainers`, no trainer: these runs stop after ingestion and snapshots, and validating
    # SFT settings would import TRL.
    return NightlyConfig(
        watch=list(repos),
        home=str(home),
        pipeline=PipelineConfig(name="nightly-test", sources=[], trainers=trainers or {"sft": None}, **pipeline),
    )


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


def traced_commits(home: Path) -> set[str]:
    """The commits of the exports the tracing step wrote under `home`."""
    return {
        json.loads(p.read_text())["from_repo"]["commit"] for p in (home / "traces" / "exports").glob("*/metadata.json")
    }


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

    assert result["changed"] == {} and result["recorded"] == {} and result["report"] is None
    assert result["checked"] == {local.key: head, remote.key: head}
    assert elapsed < 30, f"a night with nothing new took {elapsed:.1f} s"
    assert state_path(home).read_bytes() == before
    md = artifact_markdown(run_id)
    assert "nothing changed" in md and head[:12] in md and "Lemmas" in md and "Other" in md
    run = httpx.get(f"{PREFECT_API_URL.value()}/flow_runs/{run_id}", timeout=30).raise_for_status().json()
    assert run["name"] == f"nightly nightly-test {datetime.now(UTC).date().isoformat()}"  # nights told apart


def test_a_new_commit_traced_by_the_lean_dojo_double_is_trained_on_and_recorded_then_a_quiet_night_is_quick(
    prefect, tmp_path, lean_dojo_double, echo_trainer
):
    home = tmp_path / "home"
    path = lean_dojo_double("alpha")
    repo = WatchedRepo(url_or_path=str(path), branch="main")
    old = git(path, "rev-parse", "HEAD")
    record_processed(home, [(repo, old)], run_id="an-earlier-night")
    new = commit_file(path, "Alpha/More.lean", "theorem Alpha.more : True := trivial\n")
    config = nightly_config(home, repo, trainers=echo_trainer, tracing=lean_dojo_double.tracing)

    # A night with a new commit: the curriculum traces it, trains on it, and the commit is recorded
    state, run_id = run_nightly(config)
    assert state.is_completed(), state.message
    result = state.result()
    assert result["changed"] == result["recorded"] == {repo.key: new}
    assert traced_commits(home) == {new}  # the new commit was traced, not the one recorded before
    assert Path(result["checkpoints"]["echo"]).is_dir() and Path(result["report"]).exists()
    assert load_state(home).commit_of(repo) == new
    assert load_state(home).repositories[repo.key].run_id == str(run_id)
    md = artifact_markdown(run_id)
    assert "1 repositories changed" in md and "trained and recorded" in md and new[:12] in md

    # The next night, with no new commit: nothing is traced or trained, and it says so
    recorded = state_path(home).read_bytes()
    started = time.perf_counter()
    state, run_id = run_nightly(config)
    elapsed = time.perf_counter() - started
    assert state.is_completed(), state.message
    result = state.result()
    assert result["changed"] == result["recorded"] == {} and result["checked"] == {repo.key: new}
    assert elapsed < 30, f"a night with nothing new took {elapsed:.1f} s"
    assert state_path(home).read_bytes() == recorded
    assert "nothing changed" in artifact_markdown(run_id)


def test_a_trace_failing_in_the_lean_dojo_double_records_no_commit_and_the_next_night_retries(
    prefect, tmp_path, lean_dojo_double
):
    from tasks.tracing import TracingError

    home = tmp_path / "home"
    path = lean_dojo_double("alpha")
    repo = WatchedRepo(url_or_path=str(path), branch="main")
    broken = commit_file(path, "FAIL_TRACE", BUILD_ERROR + "\n")
    config = nightly_config(
        home, repo, tracing=lean_dojo_double.tracing
    )  # continue_on_source_failure false: the curriculum run raises

    state, run_id = run_nightly(config)
    assert state.is_failed()
    with pytest.raises(TracingError, match="unknown identifier 'foo'") as e:
        state.result()
    assert not e.value.transient
    assert not state_path(home).exists() and load_state(home).commit_of(repo) is None
    md = artifact_markdown(run_id)  # written although the curriculum subflow raised
    assert "retraining failed" in md and "unknown identifier 'foo'" in md and broken[:12] in md
    assert "not recorded" in md

    # The build is fixed: the next night traces the new commit, and records it
    git(path, "rm", "-q", "FAIL_TRACE")
    git(path, "commit", "-q", "-m", "fix the build")
    fixed = git(path, "rev-parse", "HEAD")
    state, _ = run_nightly(config)
    assert state.is_completed(), state.message
    assert state.result()["recorded"] == {repo.key: fixed}
    assert load_state(home).commit_of(repo) == fixed


def test_a_night_where_every_changed_repository_fails_in_the_lean_dojo_double_fails_and_records_nothing(
    prefect, tmp_path, lean_dojo_double
):
    home = tmp_path / "home"
    repos = []
    for name in ("alpha", "beta"):
        path = lean_dojo_double(name)
        commit_file(path, "FAIL_TRACE", BUILD_ERROR + "\n")
        repos.append(WatchedRepo(url_or_path=str(path), branch="main"))

    state, run_id = run_nightly(
        nightly_config(home, *repos, continue_on_source_failure=True, tracing=lean_dojo_double.tracing)
    )
    assert state.is_failed(), "a night that trained nothing ended Completed"
    # The curriculum itself refuses to go on with no source, naming each source's error
    # (tasks/plan.py); the nightly then fails with that error (RetrainingFailed, had the
    # curriculum returned instead, is tests/tasks/test_watch.py's case).
    with pytest.raises(
        DojoflowError, match="(?s)none could be imported or traced.*alpha: TracingError.*beta: TracingError"
    ) as e:
        state.result()
    assert not e.value.transient
    assert not state_path(home).exists()
    md = artifact_markdown(run_id)
    assert "retraining failed" in md
    assert md.count("unknown identifier 'foo'") >= 2  # what failed, for each repository
    assert md.count("not recorded") == 2


def test_a_night_where_some_repositories_fail_in_the_lean_dojo_double_records_only_the_others(
    prefect, tmp_path, lean_dojo_double
):
    home = tmp_path / "home"
    good_path, bad_path = lean_dojo_double("alpha"), lean_dojo_double("beta")
    good = WatchedRepo(url_or_path=str(good_path), branch="main")
    bad = WatchedRepo(url_or_path=str(bad_path), branch="main")
    good_head = git(good_path, "rev-parse", "HEAD")
    bad_head = commit_file(bad_path, "FAIL_TRACE", BUILD_ERROR + "\n")

    state, run_id = run_nightly(
        nightly_config(home, good, bad, continue_on_source_failure=True, tracing=lean_dojo_double.tracing)
    )
    assert state.is_failed(), "a night where a repository failed to trace ended Completed"
    with pytest.raises(RetrainingFailed, match="1 of 2 changed repositories failed") as e:
        state.result()
    assert list(e.value.problems) == ["beta"]
    assert traced_commits(home) == {good_head}
    assert load_state(home).commit_of(good) == good_head
    assert load_state(home).commit_of(bad) is None  # retried the next night
    md = artifact_markdown(run_id)
    assert "1 of 2 changed repositories retrained" in md
    assert "trained and recorded" in md and "failed, not recorded" in md and bad_head[:12] in md


def test_an_unknown_branch_fails_the_run_after_checking_the_others(prefect, tmp_path, lean_repo):
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
