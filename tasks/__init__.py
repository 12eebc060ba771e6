"""Dojoflow's tasks: plain logic in sub-packages (no Prefect), and the Prefect
task wrappers in `tasks/prefect_tasks/`."""
