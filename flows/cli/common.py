"""What every `dojoflow` command shares: the Typer app, the `command` decorator that turns every
DojoflowError into one line and exit code 2, the common options, and the home and store they name."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Annotated, Optional

import typer

from storage.errors import DojoflowError

from .output import Format, fail

app = typer.Typer(add_completion=False, no_args_is_help=True)  # its help: the package docstring (__init__.py)


def _print_version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            found = version("dojoflow")
        except PackageNotFoundError:  # run from a checkout that was not installed
            found = "unknown (not installed)"
        typer.echo(f"dojoflow {found}")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_print_version, is_eager=True, help="Print Dojoflow's version and exit."),
    ] = False,
) -> None:
    """Options before the command (`dojoflow --version`)."""


UnsafeNoSandbox = Annotated[
    bool,
    typer.Option(
        "--unsafe-no-sandbox",
        help="UNSAFE: run Lean without bubblewrap (where it cannot run). Lean then runs the repository's and the "
        "model's code as you, with your files and network.",
    ),
]
Home = Annotated[Optional[Path], typer.Option("--home", help="Dojoflow home (default: $DOJOFLOW_HOME or ./.dojoflow).")]
# Every command choosing repositories reads `--repo` the same way (storage/repo_specs.resolve_repositories).
Repositories = Annotated[
    Optional[list[str]],
    typer.Option("--repo", help="Repository name, repo id, URL or URL@COMMIT; repeat. Default: all."),
]
FormatOption = Annotated[
    Optional[Format],
    typer.Option("--format", help="table (the default on a terminal), csv (the default when piped) or json."),
]


def command(name: str | None = None):
    """`app.command`, and every DojoflowError becomes one line and exit code 2."""

    def wrap(fn):
        @functools.wraps(fn)
        def run(*args, **kwargs):
            try:
                return fn(*args, **kwargs)
            except DojoflowError as e:
                fail_exit(e)

        return app.command(name)(run)

    return wrap


def fail_exit(e: Exception) -> None:
    fail(e)
    raise typer.Exit(2)


def home_of(home):
    """The resolved home; an existing non-folder on the way is a clean error."""
    from storage.paths import check_folder_path
    from storage.store import dojoflow_home

    resolved = dojoflow_home(home)
    return check_folder_path(
        resolved,
        home if home is not None else f"DOJOFLOW_HOME={resolved}",
        "give --home (or DOJOFLOW_HOME) a folder, new or holding a Dojoflow home",
    )


def store_of(home, create=True):
    from storage.store import Store

    return Store.open(home_of(home), create=create)
