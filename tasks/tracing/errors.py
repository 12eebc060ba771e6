"""Errors of the tracing step, beside those in `storage.errors`.

`ToolchainMissingError` (storage.errors) covers a program that is absent; these cover
a toolchain that is present but unusable, lean-dojo itself being absent, and a trace
that failed. Each keeps its inputs as attributes and says whether a retry can help.
"""

from __future__ import annotations

from storage.errors import DojoflowError, ToolchainMissingError
from storage.repo_urls import redact_url


class LeanDojoMissingError(ToolchainMissingError):
    """The Python package lean-dojo cannot be imported by the interpreter that traces."""

    def __init__(self, searched: list[str] | None = None):
        self.program = "lean_dojo"
        self.searched = list(searched or [])
        DojoflowError.__init__(
            self,
            "the Python package lean-dojo (module `lean_dojo`) is not installed, and tracing "
            "runs it. Install the extra: `pip install -e '.[lean]'` in a Dojoflow checkout, "
            "or `pip install 'dojoflow[lean]'` (it pins lean-dojo==4.20.0).",
        )


class ToolchainError(DojoflowError):
    """A program is on PATH but unusable: `--version` fails, is unreadable, or too old."""

    def __init__(self, program: str, problem: str, fix: str):
        self.program = program
        self.problem = problem
        self.fix = fix
        super().__init__(f"`{program}`: {problem}. {fix}")


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
