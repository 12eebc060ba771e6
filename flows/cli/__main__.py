"""`python -m flows.cli ...`: the `dojoflow` command."""

from flows.cli import app

app()
