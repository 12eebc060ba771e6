"""Dojoflow's Prefect flows (orchestration only) and the `dojoflow` command line."""
