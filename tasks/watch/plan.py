"""What moved: each watched repository's check, those with a new commit, and the curriculum
run over them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..config import PipelineConfig, SourceConfig
from ..plan import SourceFailure
from .commits import latest_commit
from .config import NightlyConfig, WatchedRepo
from .state import NightlyState


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


def changed_repositories(
    watch_list: list[WatchedRepo], state: NightlyState, heads: Mapping[str, str] | None = None
) -> list[tuple[WatchedRepo, str]]:
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


def succeeded(changed: list[tuple[WatchedRepo, str]], failures: list[SourceFailure]) -> list[tuple[WatchedRepo, str]]:
    """The changed repositories the curriculum run did not report as failed sources."""
    failed = {f.source for f in failures}
    return [(repo, commit) for repo, commit in changed if repo.label not in failed]


def changed_since(checked: list[Checked], state: NightlyState) -> list[tuple[WatchedRepo, str]]:
    """The checked repositories whose newest commit is not the one last processed (those whose
    check failed are left out: they are reported, not retrained)."""
    ok = [c for c in checked if c.commit]
    return changed_repositories([c.repo for c in ok], state, {c.repo.key: c.commit for c in ok})
