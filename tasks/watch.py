"""Watched repositories for nightly retraining: their newest commits, and what was processed.

A watched repository is a git URL or a local path, with a branch. Its newest commit
is read without cloning any history: `git ls-remote URL refs/heads/BRANCH` for a
remote, `git -C PATH rev-parse` for a local repository. git runs with a minimal
environment (no tokens, no credential helpers, never prompting) and a timeout, so a
nightly job can neither leak secrets nor hang on a password prompt.

`<DOJOFLOW_HOME>/nightly/state.json` records, per watched repository, the last commit
a retraining run finished with; it is written atomically (storage/atomic.py) and only
after that run succeeded, so a failed night is retried the next night.

    python -c "from tasks.watch import WatchedRepo, latest_commit; \
print(latest_commit(WatchedRepo(url_or_path='https://github.com/yangky11/lean4-example', branch='main')))"

`NightlyConfig` is the parameter of the nightly flow (flows/nightly.py) and loads
from YAML like `PipelineConfig` (examples/nightly.yaml). The rest is that flow's logic, one
plain function per step: `checked_from` and `changed_since` (what moved), `pipeline_for`
(the curriculum run over it), `retraining_outcome` (what that run trained, which commits to
record), `summary_markdown` (the report, in every outcome) and `raise_for_failures`.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from storage.atomic import write_json
from storage.errors import DojoflowError, InputError, ToolchainMissingError, TransientError

from .config import PipelineConfig, SourceConfig, _first_error, resolve_paths
from .yaml_config import is_url as _is_url, load_yaml_mapping, resolve_local

STATE_VERSION = 1
GIT_TIMEOUT_S = 60.0

# What git may inherit: enough to run and to check TLS certificates. No tokens, no proxies
# (their URLs may hold passwords), no SSH agent. Private repositories: clone them yourself
# (with your credentials) and watch the local clone.
_PASS_THROUGH_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "SYSTEMROOT",
                     "SSL_CERT_FILE", "SSL_CERT_DIR", "GIT_SSL_CAINFO")
_TRANSIENT_MARKS = (
    "could not resolve host", "temporary failure in name resolution", "connection timed out",
    "connection refused", "connection reset", "failed to connect", "early eof", "rpc failed",
    "operation timed out", "network is unreachable", "the remote end hung up unexpectedly",
    "tls connection was non-properly terminated", "gnutls_handshake", "ssl_connect",
)
_HTTP_5XX_RE = re.compile(r"returned error: 5\d\d")
_SHA_RE = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")
_BRANCH_RE = re.compile(r"^(?![/-])(?!.*\.\.)(?!.*//)[A-Za-z0-9._/+-]+(?<!/)(?<!\.lock)$")


# -- configuration -----------------------------------------------------------------------
class WatchedRepo(BaseModel):
    """One repository the nightly flow watches for new commits."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    url_or_path: str = Field(
        description="A git URL (https://, ssh://, git@host:path, file://) or the path of a local git "
        "repository. Remote repositories must be public: no credentials reach git.")
    branch: str | None = Field(
        None, description="Branch to follow. Default: the remote's default branch (HEAD), or for a local "
        "path the commit checked out there (HEAD).")
    name: str | None = Field(
        None, description="A label for reports and the state file (default: the repository's name).")

    @field_validator("url_or_path")
    @classmethod
    def _not_empty(cls, v: str) -> str:
        v = v.strip()
        if not v:
            raise ValueError("is empty: give a git URL or the path of a local git repository")
        if v.startswith("-"):  # git would read it as an option (e.g. --upload-pack=...)
            raise ValueError(f"{v!r} starts with '-': give a git URL or a path (./{v} for a local folder)")
        return v

    @field_validator("branch")
    @classmethod
    def _branch_name(cls, v: str | None) -> str | None:
        if v is None:
            return v
        v = v.strip().removeprefix("refs/heads/")
        if not _BRANCH_RE.match(v):
            raise ValueError(f"{v!r} is not a valid branch name: give a name such as 'main'")
        return v

    @property
    def is_remote(self) -> bool:
        return _is_url(self.url_or_path)

    @property
    def key(self) -> str:
        """Identity in the state file: where it is and which branch."""
        return f"{self.url_or_path}#{self.branch or 'HEAD'}"

    @property
    def label(self) -> str:
        if self.name:
            return self.name
        tail = re.split(r"[/:]", self.url_or_path.rstrip("/"))[-1]
        return tail.removesuffix(".git") or self.url_or_path


class NightlyConfig(BaseModel):
    """The nightly retraining job: which repositories to watch, and the curriculum run to do
    over those with new commits."""

    model_config = ConfigDict(extra="forbid")

    watch: list[WatchedRepo] = Field(
        min_length=1, description="Repositories to watch. A run retrains on those whose branch moved "
        "since the last successful run (all of them on the first run).")
    pipeline: PipelineConfig = Field(
        default_factory=lambda: PipelineConfig(sources=[], name="nightly"),
        description="The curriculum run done over the changed repositories (trainers, splits, evaluation, "
        "...). Its `sources` are replaced by one `repo` + `commit` source per changed repository; its "
        "`max_steps` must be null (every changed repository is trained).")
    home: str | None = Field(
        None, description="Dojoflow home (store, checkpoints, nightly state). Default: pipeline.home, "
        "else $DOJOFLOW_HOME, else ./.dojoflow.")

    @model_validator(mode="after")
    def _unique(self):
        for kind, values in (("url_or_path + branch", [w.key for w in self.watch]),
                             ("name", [w.label for w in self.watch])):
            seen: set[str] = set()
            for v in values:
                if v in seen:
                    raise ValueError(f"two watched repositories have the same {kind} ({v!r}): "
                                     "remove one, or give each a distinct `name`")
                seen.add(v)
        if self.pipeline.max_steps is not None:
            # The curriculum's result does not say which sources a cut left out, so they would be
            # recorded as trained and never retrained.
            raise ValueError(f"pipeline.max_steps is {self.pipeline.max_steps}, and a nightly run must train on "
                             "every changed repository (one left out would be recorded as done): set it to null")
        return self

    @classmethod
    def from_yaml(cls, path: str | Path) -> NightlyConfig:
        """Load a YAML file; relative local paths (watched repositories, pipeline sources) are
        resolved against the YAML file's folder, as in PipelineConfig.from_yaml."""
        path = Path(path)
        raw = load_yaml_mapping(path, "examples/nightly.yaml")
        base = path.parent.resolve()
        for w in raw.get("watch") or []:
            if isinstance(w, dict) and "url_or_path" in w:
                w["url_or_path"] = resolve_local(w["url_or_path"], base)
        pipeline = raw.get("pipeline")
        if isinstance(pipeline, dict):
            resolve_paths(pipeline, base)
            pipeline.setdefault("sources", [])  # replaced per run; never the sample
            pipeline.setdefault("name", "nightly")
        try:
            return cls.model_validate(raw)
        except ValidationError as e:
            raise InputError(path, _first_error(e), "fix the field (examples/nightly.yaml shows a valid config)") from e

    @property
    def resolved_home(self) -> str | None:
        return self.home or self.pipeline.home


# -- git ---------------------------------------------------------------------------------
def git_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment git runs in: _PASS_THROUGH_ENV only, and nothing may prompt."""
    base = os.environ if base is None else base
    env = {k: base[k] for k in _PASS_THROUGH_ENV if k in base}
    env.setdefault("PATH", os.defpath)
    env.update(GIT_TERMINAL_PROMPT="0", GIT_ASKPASS="", SSH_ASKPASS="", GCM_INTERACTIVE="never",
               GIT_SSH_COMMAND="ssh -o BatchMode=yes -o ConnectTimeout=30")
    return env


def _git(args: list[str], timeout: float) -> subprocess.CompletedProcess:
    # `-c credential.helper=` switches off credential helpers from any git config.
    cmd = ["git", "-c", "credential.helper=", *args]
    try:
        return subprocess.run(cmd, check=False, env=git_env(), capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise ToolchainMissingError("git", "Install git (e.g. `apt-get install git`).") from None


def _message(stderr: str) -> str:
    """git's own reason: its first `fatal:`/`error:` line, else its first line."""
    lines = [ln.strip() for ln in stderr.strip().splitlines() if ln.strip()]
    for ln in lines:
        if ln.startswith(("fatal:", "error:")):
            return ln
    return lines[0] if lines else "(no message)"


def _looks_transient(stderr: str) -> bool:
    low = stderr.lower()
    return any(mark in low for mark in _TRANSIENT_MARKS) or bool(_HTTP_5XX_RE.search(low))


def latest_commit(repo: WatchedRepo, timeout: float = GIT_TIMEOUT_S) -> str:
    """The full hash of the newest commit of `repo`'s branch, read without cloning.

    Raises TransientError when a retry may help (network, timeout) and InputError when it
    cannot (unknown branch, not a git repository, private or missing remote).
    """
    if repo.is_remote:
        return _remote_commit(repo, timeout)
    return _local_commit(repo, timeout)


def _remote_commit(repo: WatchedRepo, timeout: float) -> str:
    ref = f"refs/heads/{repo.branch}" if repo.branch else "HEAD"
    try:
        res = _git(["ls-remote", "--", repo.url_or_path, ref], timeout)
    except subprocess.TimeoutExpired:
        raise TransientError(f"{repo.url_or_path}: `git ls-remote` did not answer within {timeout:.0f} s. "
                             "Check the network; the next attempt may succeed.") from None
    if res.returncode != 0:
        err = _message(res.stderr)
        if _looks_transient(res.stderr):
            raise TransientError(f"{repo.url_or_path}: `git ls-remote` failed ({err}). The network failed; "
                                 "the next attempt may succeed.")
        raise InputError(repo.url_or_path, f"`git ls-remote` failed ({err})",
                         "check the URL; a private repository cannot be watched by URL (no credentials reach "
                         "git): clone it and watch the local path instead")
    for line in res.stdout.splitlines():
        sha, _, name = line.partition("\t")
        if name.strip() == ref and _SHA_RE.match(sha.strip()):
            return sha.strip()
    what = f"has no branch {repo.branch!r}" if repo.branch else "has no HEAD (an empty repository?)"
    raise InputError(repo.url_or_path, what,
                     f"fix `branch` (`git ls-remote --heads {repo.url_or_path}` lists the branches)",
                     where="branch" if repo.branch else None)


def _local_commit(repo: WatchedRepo, timeout: float) -> str:
    path = Path(repo.url_or_path).expanduser()
    if not path.is_dir():
        raise InputError(repo.url_or_path, "is not a folder", "give a git URL or the path of a local git repository")
    rev = f"refs/heads/{repo.branch}^{{commit}}" if repo.branch else "HEAD^{commit}"
    try:
        top = _git(["-C", str(path), "rev-parse", "--show-toplevel"], timeout)
        if top.returncode != 0:
            raise InputError(repo.url_or_path, f"is not a git repository ({_message(top.stderr)})",
                             "give the path of a git repository (one with commits), or its URL")
        if Path(top.stdout.strip()).resolve() != path.resolve():
            # Its commits are those of the enclosing repository, which tracing would refuse.
            raise InputError(repo.url_or_path, f"is inside the git repository {top.stdout.strip()}, not its root",
                             "watch the repository's root folder")
        res = _git(["-C", str(path), "rev-parse", "--verify", "--quiet", "--end-of-options", rev], timeout)
    except subprocess.TimeoutExpired:
        raise TransientError(f"{repo.url_or_path}: `git rev-parse` did not finish within {timeout:.0f} s "
                             "(a slow or busy disk?); the next attempt may succeed.") from None
    if res.returncode == 0 and _SHA_RE.match(res.stdout.strip()):
        return res.stdout.strip()
    if repo.branch:
        raise InputError(repo.url_or_path, f"has no branch {repo.branch!r}",
                         f"fix `branch` (`git -C {repo.url_or_path} branch --list` lists the branches)",
                         where="branch")
    raise InputError(repo.url_or_path, "has no commit at HEAD", "commit something first (`git commit`)")


# -- state ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Processed:
    """What the state file keeps for one watched repository."""

    commit: str
    processed_at: str
    run_id: str | None = None


@dataclass(frozen=True)
class NightlyState:
    """The last commit processed per watched repository (keyed by `WatchedRepo.key`)."""

    repositories: dict[str, Processed]

    def commit_of(self, repo: WatchedRepo) -> str | None:
        p = self.repositories.get(repo.key)
        return None if p is None else p.commit


def state_path(home: str | os.PathLike) -> Path:
    return Path(home) / "nightly" / "state.json"


def load_state(home: str | os.PathLike) -> NightlyState:
    """The state under `home` (an empty one if there is none yet)."""
    import json

    path = state_path(home)
    if not path.exists():
        return NightlyState({})
    try:
        raw = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise InputError(path, f"is not valid JSON ({e})",
                         "delete it to start over (every watched repository is then retrained once)") from e
    if not isinstance(raw, dict) or raw.get("version") != STATE_VERSION or not isinstance(raw.get("repositories"), dict):
        raise InputError(path, f"is not a nightly state file of version {STATE_VERSION}",
                         "delete it to start over (every watched repository is then retrained once)")
    repos = {}
    for key, r in raw["repositories"].items():
        repos[key] = Processed(commit=r["commit"], processed_at=r["processed_at"], run_id=r.get("run_id"))
    return NightlyState(repos)


def record_processed(home: str | os.PathLike, processed: list[tuple[WatchedRepo, str]],
                     run_id: str | None = None) -> NightlyState:
    """Add `(repo, commit)` pairs to the state and write it atomically; returns the new state.

    Call it only once the run over these commits has succeeded.
    """
    state = load_state(home)
    now = datetime.now(UTC).isoformat(timespec="seconds")
    repos = dict(state.repositories)
    for repo, commit in processed:
        repos[repo.key] = Processed(commit=commit, processed_at=now, run_id=run_id)
    doc = {"version": STATE_VERSION, "repositories": {
        k: {"commit": p.commit, "processed_at": p.processed_at, "run_id": p.run_id} for k, p in repos.items()}}
    write_json(state_path(home), doc)
    return NightlyState(repos)


# -- errors ------------------------------------------------------------------------------
class NightlyFailed(DojoflowError):
    """A nightly run did part of its work and failed the rest; the report artifact says what.

    `problems` maps a watched repository's label to its error. Not transient: the next night
    retries whatever was not recorded, since only trained commits are recorded.
    """

    def __init__(self, summary: str, problems: Mapping[str, str]):
        self.summary = summary
        self.problems = dict(problems)
        super().__init__(f"{summary}: " + "; ".join(f"{label}: {err}" for label, err in self.problems.items()))


class WatchCheckFailed(NightlyFailed):
    """Some watched repositories could not be checked; the others were processed."""


class RetrainingFailed(NightlyFailed):
    """Some or all changed repositories failed to trace or import; only the others were trained
    and recorded."""


# -- what changed --------------------------------------------------------------------------
@dataclass(frozen=True)
class Checked:
    """The check of one watched repository: its newest commit, or why it could not be read."""

    repo: WatchedRepo
    commit: str | None = None
    error: str | None = None


def checked_from(repo: WatchedRepo, outcome: str | BaseException) -> Checked:
    """`outcome`: what the check returned (a commit) or the exception it raised."""
    if isinstance(outcome, BaseException):
        return Checked(repo, error=f"{type(outcome).__name__}: {outcome}")
    return Checked(repo, commit=outcome)


def changed_repositories(watch_list: list[WatchedRepo], state: NightlyState,
                         heads: Mapping[str, str] | None = None) -> list[tuple[WatchedRepo, str]]:
    """`(repo, newest commit)` for every watched repository whose newest commit is not the one
    last processed, in the order of `watch_list`.

    `heads` maps `WatchedRepo.key` to an already known newest commit (the nightly flow reads
    them in one task each); repositories missing from it are asked with `latest_commit`.
    """
    out = []
    for repo in watch_list:
        head = (heads or {}).get(repo.key) or latest_commit(repo)
        if head != state.commit_of(repo):
            out.append((repo, head))
    return out


def sources_for(changed: list[tuple[WatchedRepo, str]]) -> list[SourceConfig]:
    """One `repo` + `commit` source per changed repository, labelled with the repository's label."""
    return [SourceConfig(repo=repo.url_or_path, commit=commit, name=repo.label) for repo, commit in changed]


def pipeline_for(config: NightlyConfig, changed: list[tuple[WatchedRepo, str]], home: str) -> PipelineConfig:
    """The curriculum run over the changed repositories (the config's pipeline, its sources replaced)."""
    return config.pipeline.model_copy(update={"sources": sources_for(changed), "home": home})


def succeeded(changed: list[tuple[WatchedRepo, str]], failures: list[dict]) -> list[tuple[WatchedRepo, str]]:
    """The changed repositories the curriculum run did not report as failed sources."""
    failed = {f.get("source") for f in failures}
    return [(repo, commit) for repo, commit in changed if repo.label not in failed]


def changed_since(checked: list[Checked], state: NightlyState) -> list[tuple[WatchedRepo, str]]:
    """The checked repositories whose newest commit is not the one last processed (those whose
    check failed are left out: they are reported, not retrained)."""
    ok = [c for c in checked if c.commit]
    return changed_repositories([c.repo for c in ok], state, {c.repo.key: c.commit for c in ok})


# -- what the retraining did -----------------------------------------------------------------
@dataclass(frozen=True)
class Retraining:
    """What the curriculum run over the changed repositories did.

    `trained`: the `(repo, commit)` pairs to record. `failed`: label -> error of the changed
    repositories that failed to ingest (trace or import). `exception`: what the run raised, if
    it failed as a whole (then nothing was trained). `report`: the curriculum's report path;
    `checkpoints`: trainer -> the folder of its last checkpoint.
    """

    changed: list[tuple[WatchedRepo, str]]
    trained: list[tuple[WatchedRepo, str]]
    failed: dict[str, str]
    exception: BaseException | None = None
    report: str | None = None
    checkpoints: dict[str, str] = field(default_factory=dict)

    @property
    def error(self) -> str | None:
        e = self.exception
        return None if e is None else f"{type(e).__name__}: {e}"


def retraining_outcome(changed: list[tuple[WatchedRepo, str]], run: dict | BaseException) -> Retraining:
    """`run`: the curriculum flow's result, or the exception it raised."""
    if isinstance(run, BaseException):
        return Retraining(changed, trained=[], failed={}, exception=run)
    failures = run.get("failures") or []
    return Retraining(changed, trained=succeeded(changed, failures),
                      failed={f["source"]: f["error"] for f in failures}, report=run.get("report"),
                      checkpoints=dict(run.get("checkpoints") or {}))


def raise_for_failures(checked: list[Checked], retraining: Retraining | None) -> None:
    """Fail the night, once everything else is done, if any part of it failed.

    The curriculum's own exception if it raised; RetrainingFailed if some changed repositories
    failed to ingest (all of them: nothing was trained); WatchCheckFailed if some checks failed.
    """
    if retraining is not None and retraining.exception is not None:
        raise retraining.exception
    unchecked = {c.repo.label: c.error for c in checked if c.error}
    if retraining is not None and retraining.failed:
        n, total = len(retraining.failed), len(retraining.changed)
        summary = (f"nothing was trained: all {total} changed repositories failed" if not retraining.trained else
                   f"{n} of {total} changed repositories failed (the other {total - n} were trained and recorded)")
        raise RetrainingFailed(summary, {**retraining.failed, **unchecked})
    if unchecked:
        raise WatchCheckFailed(f"{len(unchecked)} of {len(checked)} watched repositories could not be checked",
                               unchecked)


def night_result(checked: list[Checked], changed: list[tuple[WatchedRepo, str]],
                 retraining: Retraining | None) -> dict:
    """The nightly flow's return value: commits checked, changed and recorded (by `WatchedRepo.key`),
    the curriculum's report and checkpoints (None and {} when nothing changed)."""
    return {"checked": {c.repo.key: c.commit for c in checked},
            "changed": {r.key: commit for r, commit in changed},
            "recorded": {r.key: commit for r, commit in (retraining.trained if retraining else [])},
            "report": retraining.report if retraining else None,
            "checkpoints": retraining.checkpoints if retraining else {}}


def summary_markdown(checked: list[Checked], changed: list[tuple[WatchedRepo, str]], state: NightlyState,
                     retraining: Retraining | None = None) -> str:
    """The nightly run's report, in every outcome: every repository checked, its commit, and what
    was done with it (unchanged, trained, failed and why)."""
    trained = {r.key for r, _ in (retraining.trained if retraining else [])}
    failed = retraining.failed if retraining else {}
    unchecked = [c for c in checked if c.error]
    if retraining is not None and retraining.exception is not None:
        head = (f"## Nightly: retraining failed\n\nThe curriculum run over {len(changed)} changed repositories "
                f"failed: `{retraining.error}`\n\nNo commit was recorded; the next night retries them.\n")
    elif retraining is not None and failed and not trained:
        head = (f"## Nightly: nothing was trained\n\nAll {len(changed)} changed repositories failed to trace or "
                "import. No commit was recorded; the next night retries them.\n")
    elif retraining is not None and failed:
        head = (f"## Nightly: {len(trained)} of {len(changed)} changed repositories retrained\n\n"
                f"{len(failed)} failed to trace or import; their commits were not recorded, and the next "
                "night retries them.\n")
    elif changed:
        head = f"## Nightly: {len(changed)} repositories changed\n\nRetrained on the new commits and recorded them.\n"
    elif unchecked:
        head = "## Nightly: some repositories could not be checked\n\nNo other watched repository has a new commit.\n"
    else:
        head = "## Nightly: nothing changed\n\nNo watched repository has a new commit; nothing was retrained.\n"
    changed_keys = {r.key for r, _ in changed}
    lines = [head, "| repository | branch | newest commit | last processed | status |", "|---|---|---|---|---|"]
    for c in checked:
        repo, last = c.repo, state.commit_of(c.repo)
        if c.error:
            status = f"check failed: {_cell(c.error)}"
        elif repo.key not in changed_keys:
            status = "unchanged"
        elif repo.key in trained:
            status = "new commit: trained and recorded"
        elif repo.label in failed:
            status = f"new commit: failed, not recorded: {_cell(failed[repo.label])}"
        elif retraining is not None and retraining.exception is not None:
            status = "new commit: retraining failed, not recorded"
        else:
            status = "new commit"
        lines.append(f"| {repo.label} (`{repo.url_or_path}`) | {repo.branch or 'HEAD'} | "
                     f"`{(c.commit or '-')[:12]}` | `{(last or '-')[:12]}` | {status} |")
    if retraining is not None and retraining.report:
        lines += ["", f"Curriculum report: `{retraining.report}`"]
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    """`text` on one line of a markdown table cell."""
    return " ".join(text.replace("|", "\\|").split())[:500]
