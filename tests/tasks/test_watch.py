"""Watched repositories: newest commits read with real git (local repositories and a bare
repository served as a file:// URL), errors that say whether a retry helps, the state file."""

import json
import os
import subprocess
from pathlib import Path

import pytest

from storage.atomic import TMP_MARK
from storage.errors import InputError, TransientError
from tasks.config import PipelineConfig
from tasks.git import git_env
from tasks.plan import SourceFailure
from tasks.watch import (
    Checked,
    NightlyConfig,
    NightlyState,
    Processed,
    RetrainingFailed,
    WatchCheckFailed,
    WatchedRepo,
    changed_repositories,
    changed_since,
    checked_from,
    latest_commit,
    load_state,
    pipeline_for,
    raise_for_failures,
    record_processed,
    retraining_outcome,
    state_path,
    succeeded,
    summary_markdown,
)

GIT_ID = ["-c", "user.name=Test", "-c", "user.email=test@example.com", "-c", "commit.gpgsign=false"]


def git(cwd: Path, *args: str) -> str:
    env = {"PATH": os.environ["PATH"], "HOME": str(cwd), "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(
        ["git", *GIT_ID, *args], cwd=cwd, env=env, check=True, capture_output=True, text=True
    ).stdout.strip()


def commit(repo: Path, message: str) -> str:
    (repo / "log.txt").open("a").write(message + "\n")
    git(repo, "add", "log.txt")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture
def work(tmp_path) -> Path:
    """A working repository on branch `main` with one commit."""
    repo = tmp_path / "Work"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    commit(repo, "first")
    return repo


@pytest.fixture
def remote(tmp_path, work) -> str:
    """A bare repository holding `work`'s main, as a file:// URL (what ls-remote talks to)."""
    bare = tmp_path / "served" / "Lemmas.git"
    bare.parent.mkdir()
    git(tmp_path, "clone", "-q", "--bare", str(work), str(bare))
    git(work, "remote", "add", "origin", str(bare))
    return bare.as_uri()


def test_a_new_commit_on_a_remote_branch_is_detected_and_then_unchanged(tmp_path, work, remote):
    repo = WatchedRepo(url_or_path=remote, branch="main")
    first = latest_commit(repo)
    assert first == git(work, "rev-parse", "HEAD") and len(first) == 40
    assert repo.label == "Lemmas"

    home = tmp_path / "home"
    assert changed_repositories([repo], load_state(home)) == [(repo, first)]  # never processed: changed
    record_processed(home, [(repo, first)], run_id="r1")
    assert changed_repositories([repo], load_state(home)) == []  # unchanged

    second = commit(work, "second")
    git(work, "push", "-q", "origin", "main")
    assert changed_repositories([repo], load_state(home)) == [(repo, second)]


def test_other_branches_do_not_count_and_the_default_branch_is_head(work, remote):
    main_head = git(work, "rev-parse", "HEAD")
    git(work, "checkout", "-q", "-b", "dev")
    dev_head = commit(work, "on dev")
    git(work, "push", "-q", "origin", "dev")
    assert latest_commit(WatchedRepo(url_or_path=remote, branch="main")) == main_head
    assert latest_commit(WatchedRepo(url_or_path=remote, branch="dev")) == dev_head
    assert latest_commit(WatchedRepo(url_or_path=remote)) == main_head  # the bare repo's HEAD is main


def test_a_local_path_reads_head_or_the_named_branch(work):
    first = git(work, "rev-parse", "HEAD")
    assert latest_commit(WatchedRepo(url_or_path=str(work))) == first
    git(work, "checkout", "-q", "-b", "dev")
    dev_head = commit(work, "dev work")
    assert latest_commit(WatchedRepo(url_or_path=str(work))) == dev_head
    assert latest_commit(WatchedRepo(url_or_path=str(work), branch="main")) == first


def test_a_folder_inside_a_repository_is_not_a_watched_repository(work):
    (work / "sub").mkdir()
    with pytest.raises(InputError, match="not its root"):
        latest_commit(WatchedRepo(url_or_path=str(work / "sub")))


def test_an_unknown_branch_is_an_input_error_naming_the_repository(work, remote):
    for where in (remote, str(work)):
        with pytest.raises(InputError, match="has no branch 'nope'") as e:
            latest_commit(WatchedRepo(url_or_path=where, branch="nope"))
        assert e.value.source == where and not e.value.transient


def test_not_a_repository_is_an_input_error_and_a_network_failure_is_transient(tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(InputError, match="is not a git repository"):
        latest_commit(WatchedRepo(url_or_path=str(plain)))
    with pytest.raises(InputError, match="is not a folder"):
        latest_commit(WatchedRepo(url_or_path=str(tmp_path / "nowhere")))
    missing = (tmp_path / "missing.git").as_uri()
    with pytest.raises(InputError, match="does not appear to be a git repository") as e:
        latest_commit(WatchedRepo(url_or_path=missing, branch="main"))
    assert not e.value.transient
    # Nothing listens on port 1 of the loopback: the connection is refused, as when a network is down.
    with pytest.raises(TransientError, match="127.0.0.1") as e:
        latest_commit(WatchedRepo(url_or_path="http://127.0.0.1:1/lean4-example.git", branch="main"), timeout=20)
    assert e.value.transient


def test_git_gets_no_secrets_and_never_prompts():
    env = git_env(
        {
            "PATH": "/usr/bin",
            "HOME": "/home/u",
            "GITHUB_TOKEN": "ghp_secret",
            "HTTPS_PROXY": "http://user:pw@proxy",
            "SSH_AUTH_SOCK": "/tmp/agent",
            "AWS_SECRET_ACCESS_KEY": "x",
        }
    )
    assert "ghp_secret" not in json.dumps(env) and "pw@proxy" not in json.dumps(env)
    assert set(env) >= {"PATH", "HOME"} and "SSH_AUTH_SOCK" not in env
    assert env["GIT_TERMINAL_PROMPT"] == "0"


def test_state_is_written_atomically_and_keeps_other_repositories(tmp_path, work, remote):
    home = tmp_path / "home"
    a = WatchedRepo(url_or_path=remote, branch="main")
    b = WatchedRepo(url_or_path=str(work), name="work-copy")
    record_processed(home, [(a, "a" * 40)], run_id="r1")
    record_processed(home, [(b, "b" * 40)], run_id="r2")
    doc = json.loads(state_path(home).read_text())
    assert doc["version"] == 1
    assert doc["repositories"][a.key]["commit"] == "a" * 40 and doc["repositories"][a.key]["run_id"] == "r1"
    assert load_state(home).commit_of(b) == "b" * 40
    assert not [p for p in state_path(home).parent.iterdir() if TMP_MARK in p.name]


def test_a_write_that_fails_leaves_the_previous_state_whole(tmp_path, monkeypatch):
    home = tmp_path / "home"
    repo = WatchedRepo(url_or_path="https://example.org/x/Repo.git", branch="main")
    record_processed(home, [(repo, "1" * 40)])
    before = state_path(home).read_bytes()

    def crash(src, dst):  # the process dies between writing the temporary file and renaming it
        raise OSError("killed before rename")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="killed before rename"):
        record_processed(home, [(repo, "2" * 40)])
    monkeypatch.undo()
    assert state_path(home).read_bytes() == before
    assert load_state(home).commit_of(repo) == "1" * 40
    assert not [p for p in state_path(home).parent.iterdir() if TMP_MARK in p.name]


def test_a_damaged_state_file_is_an_input_error_that_says_how_to_recover(tmp_path):
    state_path(tmp_path).parent.mkdir(parents=True)
    state_path(tmp_path).write_text("{not json")
    with pytest.raises(InputError, match="delete it to start over"):
        load_state(tmp_path)


def test_only_sources_the_curriculum_did_not_report_as_failed_are_recorded():
    a = WatchedRepo(url_or_path="https://example.org/x/Alpha", branch="main")
    b = WatchedRepo(url_or_path="https://example.org/x/Beta", branch="main")
    changed = [(a, "a" * 40), (b, "b" * 40)]
    failed = SourceFailure(source="Beta", error="ToolchainMissingError: lake")
    assert succeeded(changed, [failed]) == [(a, "a" * 40)]
    assert succeeded(changed, []) == changed


def test_the_pipeline_gets_one_repo_source_per_changed_repository(tmp_path):
    cfg = NightlyConfig(
        watch=[WatchedRepo(url_or_path="https://example.org/x/Alpha.git", branch="main")],
        pipeline=PipelineConfig(sources=[], name="nightly", split_kind="novel_premises"),
    )
    p = pipeline_for(cfg, [(cfg.watch[0], "c" * 40)], str(tmp_path))
    assert [(s.repo, s.commit, s.label) for s in p.sources] == [("https://example.org/x/Alpha.git", "c" * 40, "Alpha")]
    assert p.split_kind == "novel_premises" and p.home == str(tmp_path)


def test_nightly_config_from_yaml_resolves_local_paths_and_rejects_mistakes(tmp_path, work):
    (tmp_path / "n.yaml").write_text(
        "watch:\n  - url_or_path: Work\n  - url_or_path: https://github.com/yangky11/lean4-example\n    branch: main\n"
        "pipeline:\n  split_kind: novel_premises\n  trainers: {sft: null}\n"
    )
    cfg = NightlyConfig.from_yaml(tmp_path / "n.yaml")
    assert cfg.watch[0].url_or_path == str(work) and not cfg.watch[0].is_remote
    assert cfg.watch[1].is_remote and cfg.pipeline.sources == [] and cfg.pipeline.split_kind == "novel_premises"

    (tmp_path / "bad.yaml").write_text("watch:\n  - url_or_path: Work\n    brnch: main\n")
    with pytest.raises(InputError, match="brnch` is not a known field"):
        NightlyConfig.from_yaml(tmp_path / "bad.yaml")
    with pytest.raises(ValueError, match="same url_or_path"):
        NightlyConfig(watch=[WatchedRepo(url_or_path=str(work)), WatchedRepo(url_or_path=str(work), name="again")])
    # a cut curriculum would leave changed repositories untrained, yet recorded as done
    with pytest.raises(ValueError, match="pipeline.max_steps is 1, .* set it to null"):
        NightlyConfig(watch=[WatchedRepo(url_or_path=str(work))], pipeline=PipelineConfig(sources=[], max_steps=1))
    with pytest.raises(ValueError, match="starts with '-'"):
        WatchedRepo(url_or_path="--upload-pack=touch /tmp/pwned")


ALPHA = WatchedRepo(url_or_path="https://example.org/x/Alpha", branch="main")
BETA = WatchedRepo(url_or_path="https://example.org/x/Beta", branch="main")


def test_the_summary_names_every_commit_checked():
    state = NightlyState({ALPHA.key: Processed(commit="d" * 40, processed_at="2026-11-01T02:00:00+00:00")})
    md = summary_markdown([Checked(ALPHA, "d" * 40)], [], state)
    assert "nothing changed" in md and "d" * 12 in md and "unchanged" in md
    raise_for_failures([Checked(ALPHA, "d" * 40)], None)  # nothing failed: no error


def test_a_check_that_raised_is_reported_and_not_retrained():
    checked = [checked_from(ALPHA, "a" * 40), checked_from(BETA, InputError("Beta", "has no branch 'main'", "fix it"))]
    assert checked[1] == Checked(BETA, error="InputError: Beta: has no branch 'main'. fix it")
    assert changed_since(checked, NightlyState({})) == [(ALPHA, "a" * 40)]
    with pytest.raises(WatchCheckFailed, match="1 of 2 watched repositories could not be checked: Beta: InputError"):
        raise_for_failures(checked, None)


def test_a_night_where_every_changed_repository_failed_trains_nothing_and_fails():
    changed = [(ALPHA, "a" * 40), (BETA, "b" * 40)]
    run = {
        "report": "/r.md",
        "failures": [
            {"source": "Alpha", "error": "TracingError: lake build failed"},
            {"source": "Beta", "error": "TracingError: killed by SIGKILL"},
        ],
    }
    outcome = retraining_outcome(changed, run)
    assert outcome.trained == [] and set(outcome.failed) == {"Alpha", "Beta"}
    with pytest.raises(RetrainingFailed, match="nothing was trained: all 2 changed repositories failed") as e:
        raise_for_failures([Checked(ALPHA, "a" * 40), Checked(BETA, "b" * 40)], outcome)
    assert not e.value.transient and e.value.problems["Beta"] == "TracingError: killed by SIGKILL"
    md = summary_markdown([Checked(ALPHA, "a" * 40), Checked(BETA, "b" * 40)], changed, NightlyState({}), outcome)
    assert "nothing was trained" in md and md.count("failed, not recorded") == 2
    assert "lake build failed" in md and "killed by SIGKILL" in md


def test_a_night_where_some_repositories_failed_records_the_others_and_fails():
    changed = [(ALPHA, "a" * 40), (BETA, "b" * 40)]
    outcome = retraining_outcome(
        changed,
        {
            "report": "/r.md",
            "checkpoints": {"sft": "/c"},
            "failures": [{"source": "Beta", "error": "TracingError: x | y"}],
        },
    )
    assert outcome.trained == [(ALPHA, "a" * 40)] and outcome.checkpoints == {"sft": "/c"}
    checked = [Checked(ALPHA, "a" * 40), Checked(BETA, "b" * 40)]
    with pytest.raises(RetrainingFailed, match=r"1 of 2 changed repositories failed \(the other 1 were trained"):
        raise_for_failures(checked, outcome)
    md = summary_markdown(checked, changed, NightlyState({}), outcome)
    assert "1 of 2 changed repositories retrained" in md
    assert "| new commit: trained and recorded |" in md
    assert "failed, not recorded: TracingError: x \\| y |" in md  # a `|` in an error keeps the table whole


def test_a_curriculum_run_that_raised_records_nothing_and_its_error_is_raised_and_reported():
    changed = [(ALPHA, "a" * 40)]
    error = InputError("sources", "none could be imported or traced", "fix them")
    outcome = retraining_outcome(changed, error)
    assert outcome.trained == [] and outcome.error == f"InputError: {error}"
    with pytest.raises(InputError) as e:
        raise_for_failures([Checked(ALPHA, "a" * 40)], outcome)
    assert e.value is error
    md = summary_markdown([Checked(ALPHA, "a" * 40)], changed, NightlyState({}), outcome)
    assert "retraining failed" in md and "none could be imported or traced" in md and "not recorded" in md
