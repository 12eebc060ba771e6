"""What the flows and the CLI need of Prefect's runtime: its environment (environment.py), the
server a run talks to (server.py), marking killed runs Crashed (crashed.py), and the checks
`prefect deploy` runs (deploy_checks.py)."""
