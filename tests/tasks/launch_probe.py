"""A worker entry of the tests' own (tasks/trainers/worker.py `Job.entry`): several jobs, one after
the other, in the same torchrun processes, each run by the worker's own `run` (the registered
trainer's `train`, rank 0 writing the job's result file), as a launch of each job alone would run
it. tests/tasks/test_launch_trainers.py launches the progress model's and the retriever's steps
together: each process then imports torch and transformers once, not once per trainer."""

from __future__ import annotations


def run_jobs(jobs: list[dict]) -> dict:
    """`worker.run` of each of `jobs` (`worker.Job` fields), in turn; their exit codes (any but 0 raises)."""
    from tasks.trainers.worker import Job, run

    codes = []
    for job in jobs:
        codes.append(run(Job.model_validate(job)))
        if codes[-1] != 0:
            raise RuntimeError(f"job of trainer {job['trainer']!r} exited with code {codes[-1]}")
    return {"codes": codes}
