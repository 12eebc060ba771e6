"""`dojoflow doctor`: what this machine can do (tasks/doctor.py), printed as one table and the
list of what is missing with the features it costs and the fix."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated

import typer
from rich import box
from rich.markup import escape
from rich.table import Table

from .common import Home, app
from .output import console, say_line


def prefect_server_check(home: Path):
    from storage.store import dojoflow_home
    from tasks.doctor import Check

    from ..runtime import server as servers

    needed = "seeing runs in the Prefect UI; deployments and the nightly schedule"
    url = os.environ.get("PREFECT_API_URL")
    if url:
        ok = servers.is_healthy(url)
        return Check("Prefect server", ok, f"PREFECT_API_URL={url}", needed, "" if ok else f"start the server at {url}")
    found = servers.running(dojoflow_home(home))
    if found is not None:
        return Check("Prefect server", True, f"`dojoflow server start` at {found.ui_url}", needed)
    return Check(
        "Prefect server",
        True,
        "none running: each run starts a temporary one",
        needed,
        "`dojoflow server start` keeps one running, with its UI",
    )


@app.command("doctor")
def doctor_cmd(
    home: Home = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the checks as JSON.")] = False,
):
    """What this machine can do: Python, Prefect server, GPU, Lean toolchain, lake, each backend's package, bubblewrap."""
    from storage.store import dojoflow_home
    from tasks.doctor import check_home_filesystem, machine_checks

    python, *rest = machine_checks()
    checks = [
        python,
        prefect_server_check(home),
        check_home_filesystem(str(home or os.environ.get("DOJOFLOW_HOME") or dojoflow_home(None))),
        *rest,
    ]
    if as_json:
        print(json.dumps([c.row() for c in checks], indent=2))
        return
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for column in ("check", "ok", "found"):
        table.add_column(column, overflow="fold")
    for c in checks:
        table.add_row(escape(c.name), "yes" if c.ok else "[bold red]no[/]", escape(c.found))
    console.print(table)
    for c in checks:
        if not c.ok:
            say_line(f"no {c.name}: needed for {c.needed_for}. Fix: {c.fix}")
    if all(c.ok for c in checks):
        say_line("everything Dojoflow can use is here")
