"""Prefect flows (orchestration only: each step a few lines calling tasks), the `dojoflow`
command, and what both need of Prefect's runtime.

    curriculum.py   the curriculum flow: ingest, order, per step snapshot -> train -> evaluate
    prove.py        proving: `prove` (sorry theorems -> patches), `evaluate-proving`, the step evaluation
    grpo.py         `grpo-train` and `grpo-evaluate` on a lean-grpo theorem file
    nightly.py      retrain when watched repositories get new commits (a subflow: the curriculum)
    ui.py           what a flow run shows in the Prefect UI (artifacts, logs) and its end hooks
    runtime/        the Prefect server and environment, crashed runs, `prefect deploy` checks
    cli/            the `dojoflow` command, its terminal display and output formats

The flows' tasks are in tasks/prefect_tasks/, their logic in plain functions under tasks/
and storage/.
"""
