"""Which repositories the nightly flow watches, and the curriculum run it does over them.

`NightlyConfig` is the parameter of the nightly flow (flows/nightly.py) and loads from
YAML like `PipelineConfig` (examples/nightly.yaml). A watched repository is a git URL or a
local path, with a branch; a URL holding credentials is refused (docs/git-and-credentials.md).
"""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from storage.errors import InputError

from ..config import PipelineConfig, first_error, resolve_paths
from ..git import is_remote, refuse_credentials, repo_name
from ..yaml_config import load_yaml_mapping, resolve_local

_BRANCH_RE = re.compile(r"^(?![/-])(?!.*\.\.)(?!.*//)[A-Za-z0-9._/+-]+(?<!/)(?<!\.lock)$")


class WatchedRepo(BaseModel):
    """One repository the nightly flow watches for new commits."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    url_or_path: str = Field(
        description="A git URL (https://, ssh://, git@host:path, file://) or the path of a local git "
        "repository. Remote repositories must be public: no credentials reach git."
    )
    branch: str | None = Field(
        None,
        description="Branch to follow. Default: the remote's default branch (HEAD), or for a local "
        "path the commit checked out there (HEAD).",
    )
    name: str | None = Field(
        None, description="A label for reports and the state file (default: the repository's name)."
    )

    @field_validator("url_or_path")
    @classmethod
    def _not_empty(cls, v: str) -> str:
        v = v.strip()
        if not v:
            raise ValueError("is empty: give a git URL or the path of a local git repository")
        if v.startswith("-"):  # git would read it as an option (e.g. --upload-pack=...)
            raise ValueError(f"{v!r} starts with '-': give a git URL or a path (./{v} for a local folder)")
        # An InputError, not a ValueError: pydantic's error dump would quote the secret.
        return refuse_credentials(v, "watch[].url_or_path")

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
        return is_remote(self.url_or_path)

    @property
    def key(self) -> str:
        """Identity in the state file: where it is and which branch."""
        return f"{self.url_or_path}#{self.branch or 'HEAD'}"

    @property
    def label(self) -> str:
        if self.name:
            return self.name
        return repo_name(self.url_or_path)


class NightlyConfig(BaseModel):
    """The nightly retraining job: which repositories to watch, and the curriculum run to do
    over those with new commits."""

    model_config = ConfigDict(extra="forbid")

    watch: list[WatchedRepo] = Field(
        min_length=1,
        description="Repositories to watch. A run retrains on those whose branch moved "
        "since the last successful run (all of them on the first run).",
    )
    pipeline: PipelineConfig = Field(
        default_factory=lambda: PipelineConfig(sources=[], name="nightly"),
        description="The curriculum run done over the changed repositories (trainers, splits, evaluation, "
        "...). Its `sources` are replaced by one `repo` + `commit` source per changed repository; its "
        "`max_steps` must be null (every changed repository is trained).",
    )
    home: str | None = Field(
        None,
        description="Dojoflow home (store, checkpoints, nightly state). Default: pipeline.home, "
        "else $DOJOFLOW_HOME, else ./.dojoflow.",
    )

    @model_validator(mode="after")
    def _unique(self):
        for kind, values in (
            ("url_or_path + branch", [w.key for w in self.watch]),
            ("name", [w.label for w in self.watch]),
        ):
            seen: set[str] = set()
            for v in values:
                if v in seen:
                    raise ValueError(
                        f"two watched repositories have the same {kind} ({v!r}): "
                        "remove one, or give each a distinct `name`"
                    )
                seen.add(v)
        if self.pipeline.max_steps is not None:
            # The curriculum's result does not say which sources a cut left out, so they would be
            # recorded as trained and never retrained.
            raise ValueError(
                f"pipeline.max_steps is {self.pipeline.max_steps}, and a nightly run must train on "
                "every changed repository (one left out would be recorded as done): set it to null"
            )
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
            raise InputError(path, first_error(e), "fix the field (examples/nightly.yaml shows a valid config)") from e

    @property
    def resolved_home(self) -> str | None:
        return self.home or self.pipeline.home
