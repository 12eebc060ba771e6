"""The job the tracing parent (trace.py) hands to its subprocess (worker.py), as JSON.

Kept apart from worker.py so that importing the package never imports the worker module,
which `python -m tasks.tracing.worker` runs as __main__.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from storage.errors import InputError


def check_build_deps(build_deps: bool, where: str = "tracing.build_deps") -> None:
    """Refuse `build_deps: false` before any work: lean-dojo then leaves the traced repository
    without its file graph, and the export cannot write corpus.jsonl without it (convert.py
    `corpus_records`), so the trace, hours of `lake build`, would end in an error (conformance #16)."""
    if not build_deps:
        raise InputError(
            where,
            "is false: lean-dojo then builds no file graph, and the LeanDojo export needs it for corpus.jsonl",
            "set tracing.build_deps: true (lean-dojo's default)",
        )


class TraceJob(BaseModel):
    """What the parent asks the tracing subprocess to do (written as JSON in the work folder)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    checkout: str = Field(description="Absolute path of the git checkout to trace; its HEAD is `commit`.")
    commit: str = Field(description="Full commit hash of the checkout's HEAD.")
    export_url: str = Field(description="Url recorded for the traced repository in the export.")
    export_dir: str = Field(description="Folder the export is written to (must not exist yet).")
    result_path: str = Field(description="Where the child writes its result or its error, as JSON.")
    commit_time: str | None = Field(default=None, description="Commit time (ISO 8601) recorded in metadata.json.")
    toolchain: dict | None = Field(
        default=None, description="find_toolchain() of the parent, recorded in metadata.json."
    )
    build_deps: bool = Field(default=True, description="lean-dojo's build_deps: also trace the dependencies' files.")
