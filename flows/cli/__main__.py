"""`python -m flows.cli ...`: the `dojoflow` command."""

from flows.cli import main

main()
