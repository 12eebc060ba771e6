"""`dojoflow server start|stop|status`: a local Prefect server (and UI) kept between runs."""

from __future__ import annotations

from typing import Annotated

import typer

from storage.errors import DojoflowError

from .common import Home, app, fail_exit, home_of
from .output import console

server_app = typer.Typer(
    no_args_is_help=True, help="A local Prefect server kept running between runs, on this home's Prefect database."
)
app.add_typer(server_app, name="server")


@server_app.command("start")
def server_start_cmd(
    home: Home = None,
    port: Annotated[int, typer.Option(help="Port on 127.0.0.1.")] = 4200,
):
    """Start Prefect's server (API and UI) on <home>/prefect, in the background; `dojoflow run`
    then uses it (no server start per run) and its UI shows every run of this home."""
    from ..runtime import server as servers

    resolved = home_of(home)
    try:
        found = servers.running(resolved)
        server = found or servers.start_persistent(resolved, port)
    except DojoflowError as e:
        fail_exit(e)
    state = "already running" if found else "started"
    console.print(
        f"Prefect server {state}: {server.ui_url} (pid {server.pid}, database in {servers.prefect_home(resolved)})",
        soft_wrap=True,
        markup=False,
    )
    console.print(
        "`dojoflow run` uses it; open the UI at that address; `dojoflow server stop` stops it",
        soft_wrap=True,
        markup=False,
    )


@server_app.command("stop")
def server_stop_cmd(home: Home = None):
    """Stop the server `dojoflow server start` started for this home."""
    from ..runtime import server as servers

    stopped = servers.stop_persistent(home_of(home))
    console.print(
        f"stopped the Prefect server at {stopped.ui_url}" if stopped else "no Prefect server is running for this home",
        soft_wrap=True,
        markup=False,
    )


@server_app.command("status")
def server_status_cmd(home: Home = None):
    """Say whether a server started by `dojoflow server start` runs for this home (exit 1 if not)."""
    from ..runtime import server as servers

    found = servers.running(home_of(home))
    if found is None:
        console.print(
            "no Prefect server is running for this home: `dojoflow server start`", soft_wrap=True, markup=False
        )
        raise typer.Exit(1)
    console.print(f"Prefect server running: {found.ui_url} (pid {found.pid})", soft_wrap=True, markup=False)
