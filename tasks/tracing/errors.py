"""Errors of the tracing step, beside those in `storage.errors`.

`ToolchainMissingError` (storage.errors) covers a program that is absent; `ToolchainError`
(a toolchain present but unusable) and `LeanDojoMissingError` are defined beside lean-dojo's
install check (tasks/lean/dojo_repo.py), which the leandojo backend runs too; `TracingError`
covers a trace that failed. Each keeps its inputs as attributes and says whether a retry can help.
"""

from __future__ import annotations

from storage.errors import DojoflowError
from storage.repo_urls import redact_url
from tasks.lean.dojo_repo import LeanDojoMissingError, ToolchainError  # noqa: F401 (defined beside lean-dojo's check)


class TracingError(DojoflowError):
    """lean-dojo, lake or git failed while tracing a repository.

    `log_path` is the full log of the attempt and `log_tail` its last lines (printed last);
    `transient` is true only for failures a retry can fix (the network while cloning).
    Credentials in any URL the message quotes are redacted.
    """

    def __init__(
        self,
        source: str,
        commit: str | None,
        problem: str,
        fix: str,
        log_path=None,
        transient: bool = False,
        log_tail: str | None = None,
    ):
        self.source = source
        self.commit = commit
        self.problem = problem
        self.fix = fix
        self.log_path = None if log_path is None else str(log_path)
        self.transient = transient
        self.log_tail = log_tail
        at = f" at {commit[:12]}" if commit else ""
        log = f" Full log: {self.log_path}." if self.log_path else ""
        tail = f"\n--- last lines of the log ---\n{log_tail}" if log_tail else ""
        # git and lake quote the URLs they fail on, and a package URL may hold a token.
        super().__init__(redact_url(f"tracing {source}{at} failed: {problem}. {fix}.{log}{tail}"))
