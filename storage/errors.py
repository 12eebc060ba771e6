"""Errors raised by the dataset store.

Each error keeps its inputs as attributes and says whether retrying can help
(`transient`), so Prefect tasks retry only what a retry can fix.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

T = TypeVar("T")


class DojoflowError(Exception):
    """Base class for every error Dojoflow raises on purpose."""

    transient: bool = False


class StoreError(DojoflowError):
    """Something about the store itself (layout, version, catalog)."""


class StoreLockedError(StoreError):
    """Another process holds the lock: a writer (for writers and readers alike), or
    readers (for a writer). Transient: waiting and retrying helps."""

    transient = True

    def __init__(self, store_path, holder: str, reader: bool = False):
        self.store_path = store_path
        self.holder = holder
        self.reader = reader
        if reader:
            msg = (
                f"the store at {store_path} is being written by another process ({holder}) and did not "
                "become readable in time. Run the command again when that write has finished."
            )
        else:
            msg = (
                f"the store at {store_path} is locked by another writer ({holder}). "
                "Wait for that process to finish, or, if it is dead, run the command again: "
                "a lock left by a dead process is released by the operating system."
            )
        super().__init__(msg)


class FormatVersionError(StoreError):
    """The store was written by another format version. Terminal: an older store needs
    `dojoflow migrate`, a newer one a newer Dojoflow."""

    def __init__(self, store_path, found: int, supported: int):
        self.store_path = store_path
        self.found = found
        self.supported = supported
        if found > supported:
            fix = (
                "upgrade Dojoflow to a release that reads it, or point DOJOFLOW_HOME at another folder "
                "(a store is never migrated backwards)"
            )
        else:
            fix = (
                f"run `dojoflow migrate --home {_home_of(store_path)}` to bring it to version {supported} "
                "(it keeps every repository, snapshot and metric)"
            )
        super().__init__(
            f"the store at {store_path} has format version {found}, this Dojoflow reads version {supported}: {fix}."
        )


def _home_of(store_path) -> str:
    """The DOJOFLOW_HOME that holds `store_path` (`<home>/store`)."""
    from pathlib import Path

    p = Path(store_path)
    return str(p.parent if p.name == "store" else p)


class MigrationError(StoreError):
    """A migration could not run (no step registered, or a step failed). The store is
    left at the last version that completed; fixing the cause and rerunning resumes."""

    def __init__(self, store_path, found: int, target: int, problem: str):
        self.store_path = store_path
        self.found = found
        self.target = target
        super().__init__(
            f"cannot migrate the store at {store_path} from format version {found} to {target}: {problem}. "
            "The store is still at the version its FORMAT_VERSION.json names; report this as a bug, "
            "or restore a backup."
        )


def one_line(name: str) -> str:
    """`name` as it is, or quoted (Python's repr) when it holds a line break or another control
    character: an error stays one line whatever a name holds."""
    return repr(name) if any(ord(c) < 32 or 127 <= ord(c) < 160 for c in name) else name


def some_names(names, shown: int = 5) -> str:
    """The first `shown` of `names` (each `one_line`) and how many there are in all: an error
    naming 300,000 theorems was one 4 MB line."""
    names = list(names)
    first = ", ".join(one_line(str(n)) for n in names[:shown])  # only the shown ones are quoted
    if len(names) <= shown:
        return first
    return f"{first} and {len(names) - shown} more ({len(names)} in all)"


def one_of(table: Mapping[str, T], name: str, what: str, where: str) -> T:
    """`table[name]`, or an InputError naming `name`, that it is not `what` ("a Lean backend") and the
    names `table` holds (a registry's look-up: Lean backends, trainers)."""
    try:
        return table[name]
    except KeyError:
        raise InputError(name, f"is not {what}", f"use one of {', '.join(table)}", where=where) from None


class InputError(DojoflowError):
    """Input from a user (an export, a path, a commit, a config) is not valid.

    `source` names the file or value, `where` the record or field inside it.
    """

    def __init__(self, source, problem: str, fix: str, where: str | None = None):
        self.source = str(source)
        self.where = where
        self.problem = problem
        self.fix = fix
        loc = f"{one_line(self.source)}" + (f", {where}" if where else "")
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


class DamagedStoreError(StoreError):
    """A file of the store (a repository's Parquet file, the catalog) cannot be read.
    Terminal: `dojoflow repair` rebuilds what can be rebuilt and says what was lost."""

    def __init__(self, path, problem: str, store_path):
        self.path = str(path)
        self.problem = problem
        home = _home_of(store_path)
        if self.path.endswith(".duckdb"):
            fix = (
                f"run `dojoflow repair --home {home}`: it rebuilds the catalog from the store's Parquet files, "
                "keeping the metrics, runs and checkpoints tables where they are still readable"
            )
        else:
            fix = (
                f"run `dojoflow repair --home {home}`: it removes the damaged repository from the store "
                "(import it again afterwards) and rebuilds the catalog"
            )
        super().__init__(f"{self.path} is damaged ({problem}). {fix}.")
