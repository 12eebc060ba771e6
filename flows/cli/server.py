"""`dojoflow server start|stop|status|setup`: a local Prefect server (and UI) kept between runs, and
Dojoflow's automations installed on it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from storage.errors import DojoflowError, InputError

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


@server_app.command("setup")
def server_setup_cmd(
    home: Home = None,
    file: Annotated[
        Optional[Path], typer.Option("--file", help="The automation file. Default: deployments/automations.yaml.")
    ] = None,
    webhook: Annotated[
        Optional[str],
        typer.Option(help="Create (or update) the notification block `notify` names as a webhook posting to this URL."),
    ] = None,
):
    """Install Dojoflow's automations (alerts on failed or missing nightlies, regressions, failed
    traces; prove after a new checkpoint) on this home's server, or PREFECT_API_URL's
    (docs/operations.md). All or nothing; running it again replaces them."""
    import os

    from ..runtime import automations
    from ..runtime import server as servers

    resolved = home_of(home)
    api = os.environ.get("PREFECT_API_URL")
    if not api:
        found = servers.running(resolved)
        api = found.url if found else None
    try:
        if not api or not servers.is_healthy(api):
            raise InputError(
                api or "--home",
                "no Prefect server answers" + ("" if api else f" for {resolved}"),
                "start one with `dojoflow server start` (or point PREFECT_API_URL at yours)",
            )
        names = automations.install(automations.plan(file or automations.DEFAULT_FILE, api, webhook))
    except DojoflowError as e:
        fail_exit(e)
    console.print(f"installed {len(names)} automations on {api}:", soft_wrap=True, markup=False)
    for name in names:
        console.print(f"  {name}", soft_wrap=True, markup=False)
