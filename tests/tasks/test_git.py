"""The one git layer (tasks/git.py, storage/repo_urls.py): what is remote, one normal form,
credentials refused and redacted, and git run for real without credential helpers or prompts.

Every git call talks to local repositories or to an HTTP server on the loopback interface
started by the test; nothing reaches the network."""

import os
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from storage.errors import InputError
from storage.ids import repo_name
from tasks.config import SourceConfig
from tasks.git import (
    GitFailed,
    is_remote,
    normalize_url,
    redact_url,
    refuse_credentials,
    remote_ref,
    run_git,
    same_repository,
    url_credentials,
)
from tasks.lean.environment import minimal_env
from tasks.tracing.checkout import parse_source, resolve_remote_head
from tasks.tracing.errors import TracingError
from tasks.watch import WatchedRepo, latest_commit

TOKEN = "ghp_TopSecret123"


@pytest.mark.parametrize(
    "url",
    [
        "deploy@host:a/b.git",
        "git@github.com:o/r.git",
        "host.example:repo.git",
        "https://github.com/o/r",
        "ssh://git@host:2222/o/r.git",
        "file:///srv/git/r.git",
        "git://host/r",
    ],
)
def test_urls_and_scp_style_addresses_are_remote(url):
    assert is_remote(url)
    assert WatchedRepo(url_or_path=url).is_remote
    assert parse_source(url).kind == "remote"  # tracing agrees with the watch


@pytest.mark.parametrize("path", ["/srv/lean/repo", "./repo", "repo", "~/lean/repo", "a/b:c", "C:/lean/repo"])
def test_paths_are_local(path):
    assert not is_remote(path)
    assert not WatchedRepo(url_or_path=path).is_remote


def test_one_normal_form_for_every_spelling_of_a_repository():
    spellings = [
        "git@github.com:o/r.git",
        "https://github.com/o/r",
        "https://github.com/o/r.git/",
        "HTTPS://GitHub.com/o/r",
        "ssh://git@github.com/o/r.git",
    ]
    assert {normalize_url(s).removeprefix("ssh").removeprefix("https") for s in spellings} == {"://github.com/o/r"}
    assert normalize_url("deploy@host:a/b.git") == "https://host/a/b"
    assert normalize_url("file:///srv/git/r.git/") == "file:///srv/git/r"
    assert normalize_url("/srv/lean/repo/") == "/srv/lean/repo"
    assert same_repository("git@github.com:o/r.git", "https://github.com/o/r/")
    assert not same_repository("https://github.com/o/r", "https://github.com/o/r2")
    assert repo_name("deploy@host:a/b.git") == "b" and repo_name("file:///srv/git/r.git") == "r"


def test_credentials_are_found_and_redacted_but_an_ssh_user_is_not_a_secret():
    assert url_credentials(f"http://user:{TOKEN}@host/x.git") == f"user:{TOKEN}"
    assert url_credentials(f"https://{TOKEN}@github.com/o/r") == TOKEN
    assert url_credentials(f"ssh://git:{TOKEN}@host/r") == f"git:{TOKEN}"
    assert url_credentials(f"git:{TOKEN}@host:o/r.git") == f"git:{TOKEN}"
    for plain in ("git@github.com:o/r.git", "ssh://git@host/r.git", "https://github.com/o/r", "/a/b@c"):
        assert url_credentials(plain) is None, plain
    assert redact_url(f"http://user:{TOKEN}@host/x.git") == "http://***@host/x.git"
    message = f"fatal: unable to access 'https://{TOKEN}@host/x.git/': 403"
    assert redact_url(message) == "fatal: unable to access 'https://***@host/x.git/': 403"


def test_a_url_with_credentials_is_refused_naming_the_field_with_the_secret_hidden(tmp_path):
    url = f"http://user:{TOKEN}@host/x.git"
    for make, field in (
        (lambda: SourceConfig(repo=url), "sources[].repo"),
        (lambda: WatchedRepo(url_or_path=url), "watch[].url_or_path"),
        (lambda: parse_source(url), "repository url"),
    ):
        with pytest.raises(InputError) as e:
            make()
        assert e.value.where == field and e.value.source == "http://***@host/x.git"
        assert "credential helper" in str(e.value) and TOKEN not in str(e.value)
    assert refuse_credentials("git@github.com:o/r.git", "f") == "git@github.com:o/r.git"


def _git(cwd: Path, *args: str) -> str:
    env = {"PATH": os.environ["PATH"], "HOME": str(cwd), "GIT_CONFIG_NOSYSTEM": "1"}
    ident = ["-c", "user.name=T", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"]
    return subprocess.run(
        ["git", *ident, *args], cwd=cwd, env=env, check=True, capture_output=True, text=True
    ).stdout.strip()


def test_remote_ref_reads_a_file_url_and_a_missing_ref_is_none(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    _git(work, "init", "-q", "-b", "main")
    (work / "f").write_text("x")
    _git(work, "add", "f")
    _git(work, "commit", "-q", "-m", "one")
    head = _git(work, "rev-parse", "HEAD")
    url = work.as_uri()
    assert remote_ref(url, "refs/heads/main") == head and remote_ref(url) == head
    assert remote_ref(url, "refs/heads/nope") is None
    with pytest.raises(GitFailed) as e:
        remote_ref((tmp_path / "missing").as_uri())
    assert not e.value.transient


class _AskForPassword(BaseHTTPRequestHandler):
    """An HTTP git server that wants a password: every request gets 401."""

    def do_GET(self):
        self.send_response(401)
        self.send_header("WWW-Authenticate", 'Basic realm="git"')
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def password_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _AskForPassword)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/private.git"
    server.shutdown()
    thread.join()


@pytest.fixture
def home_with_credential_helper(tmp_path, monkeypatch):
    """A HOME whose git config names a credential helper that would hand out a password, and
    records that it was asked."""
    home = tmp_path / "home"
    home.mkdir()
    asked = tmp_path / "helper-was-asked"
    helper = tmp_path / "helper.sh"
    helper.write_text(f"#!/bin/sh\ntouch {asked}\necho username=u\necho password={TOKEN}\n")
    helper.chmod(0o755)
    (home / ".gitconfig").write_text(f"[credential]\n\thelper = {helper}\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    return asked


def test_no_credential_helper_is_asked_and_git_never_prompts(password_server, home_with_credential_helper):
    asked = home_with_credential_helper
    # The helper works: plain git, in the same HOME, asks it.
    subprocess.run(
        ["git", "ls-remote", "--", password_server],
        env={**os.environ, "GIT_TERMINAL_PROMPT": "0"},
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert asked.exists()
    asked.unlink()
    # Dojoflow's git layer (the watch's lookup, tracing's) does not.
    with pytest.raises(GitFailed) as e:
        remote_ref(password_server, timeout=60)
    assert not e.value.transient and TOKEN not in str(e.value)
    with pytest.raises(InputError):
        latest_commit(WatchedRepo(url_or_path=password_server), timeout=60)
    with pytest.raises(TracingError) as e:
        resolve_remote_head(parse_source(password_server))
    assert not e.value.transient and "no credentials reach git" in str(e.value)
    assert not asked.exists()
    # Nor does git started by another program (lake, lean-dojo) in tracing's environment.
    res = subprocess.run(
        ["git", "ls-remote", "--", password_server],
        env=minimal_env(),
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert res.returncode != 0 and not asked.exists()


def test_run_git_passes_no_secret_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    monkeypatch.setenv("HTTPS_PROXY", f"http://u:{TOKEN}@proxy:3128")
    res = run_git(["var", "GIT_EDITOR"], cwd=tmp_path)  # any git command; its environment is what counts
    assert res.returncode in (0, 128)
    probe = run_git(["-c", "alias.env=!env", "env"], cwd=tmp_path)
    assert probe.returncode == 0 and TOKEN not in probe.stdout and "GIT_TERMINAL_PROMPT=0" in probe.stdout


def test_config_files_keep_scp_style_urls_and_resolve_only_local_paths(tmp_path):
    from tasks.config import PipelineConfig
    from tasks.watch import NightlyConfig

    (tmp_path / "pipeline.yaml").write_text("sources:\n  - repo: deploy@host:a/b.git\n  - repo: lean/local\n")
    sources = PipelineConfig.from_yaml(tmp_path / "pipeline.yaml").sources
    assert sources[0].repo == "deploy@host:a/b.git" and sources[1].repo == str(tmp_path / "lean" / "local")
    (tmp_path / "nightly.yaml").write_text(
        "watch:\n  - url_or_path: deploy@host:a/b.git\n  - url_or_path: lean/local\n"
    )
    watch = NightlyConfig.from_yaml(tmp_path / "nightly.yaml").watch
    assert watch[0].url_or_path == "deploy@host:a/b.git" and watch[0].is_remote and watch[0].label == "b"
    assert watch[1].url_or_path == str(tmp_path / "lean" / "local") and not watch[1].is_remote
