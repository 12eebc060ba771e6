"""Errors raised by the dataset store.

Each error keeps its inputs as attributes and says whether retrying can help
(`transient`), so Prefect tasks retry only what a retry can fix.
"""

from __future__ import annotations


class DojoflowError(Exception):
    """Base class for every error Dojoflow raises on purpose."""

    transient: bool = False


class StoreError(DojoflowError):
    """Something about the store itself (layout, version, catalog)."""


class StoreLockedError(StoreError):
    """Another process is writing to the store."""

    transient = True

    def __init__(self, store_path, holder: str):
        self.store_path = store_path
        self.holder = holder
        super().__init__(
            f"the store at {store_path} is locked by another writer ({holder}). "
            "Wait for that process to finish, or, if it is dead, run the command again: "
            "a lock left by a dead process is released by the operating system."
        )


class FormatVersionError(StoreError):
    """The store was written by another format version."""

    def __init__(self, store_path, found: int, supported: int):
        self.store_path = store_path
        self.found = found
        self.supported = supported
        if found > supported:
            fix = "upgrade Dojoflow to a release that reads it, or point DOJOFLOW_HOME at another folder"
        else:
            fix = "run `dojoflow migrate` to bring it to the current format"
        super().__init__(
            f"the store at {store_path} has format version {found}, this Dojoflow reads version "
            f"{supported}: {fix}."
        )


class InputError(DojoflowError):
    """Input from a user (an export, a path, a commit, a config) is not valid.

    `source` names the file or value, `where` the record or field inside it.
    """

    def __init__(self, source, problem: str, fix: str, where: str | None = None):
        self.source = str(source)
        self.where = where
        self.problem = problem
        self.fix = fix
        loc = f"{self.source}" + (f", {where}" if where else "")
        super().__init__(f"{loc}: {problem}. {fix}")


class RepositoryConflictError(StoreError):
    """A repository at this commit is already stored with different content."""

    def __init__(self, repo_id: str, old_hash: str, new_hash: str):
        self.repo_id = repo_id
        super().__init__(
            f"repository {repo_id} is already in the store with different content "
            f"({old_hash[:12]} stored, {new_hash[:12]} new). Pass replace=True "
            "(`--replace` on the command line) to replace it."
        )


class ToolchainMissingError(DojoflowError):
    """A program needed to trace or check Lean (lake, lean, git) is not on PATH."""

    def __init__(self, program: str, how_to_install: str):
        self.program = program
        super().__init__(f"`{program}` was not found on PATH. {how_to_install}")


class TransientError(DojoflowError):
    """A failure a retry may fix (network, a busy server)."""

    transient = True
