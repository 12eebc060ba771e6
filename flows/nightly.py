"""The nightly flow: retrain when watched repositories get new commits.

    prefect deployment run 'nightly/nightly'          # as deployed by prefect.yaml (02:00 UTC)
    python -c "from flows.nightly import nightly; from tasks.watch import NightlyConfig; \
nightly(NightlyConfig.from_yaml('examples/nightly.yaml'))"

1. Read the newest commit of every watched branch (`git ls-remote`, no clone; one task each).
2. Compare with `<home>/nightly/state.json`: what moved since the last successful night.
3. Nothing new: finish at once. Otherwise run the curriculum flow as a subflow over the
   changed repositories (`repo` + `commit` sources, traced inside its ingest task), with the
   trainer and evaluation settings of `config.pipeline`.
4. Record in the state file the commits that run trained on, and only those: a repository
   that failed to trace, or a run that failed, is retried the next night.
5. Write the `nightly-report` markdown artifact, in every outcome (nothing changed, trained,
   failed, and why).
6. End Failed if anything failed: a repository whose check failed (after retries, for network
   errors), a repository that failed to trace (even when `continue_on_source_failure` let the
   others train), or the curriculum run itself.

The logic of each step is in tasks/watch/ (one module per concern); the tasks are in
tasks/prefect_tasks/nightly.py.
"""

from __future__ import annotations

from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact
from prefect.runtime import flow_run

from flows.curriculum import curriculum
from storage.store import dojoflow_home
from tasks import events, watch
from tasks.prefect_tasks import nightly_tasks
from tasks.prefect_tasks.events import emit
from tasks.watch import NightlyConfig


def nightly_run_name() -> str:
    """`nightly 2026-11-24`, or `nightly <pipeline> 2026-11-24` (tasks/watch/report.py)."""
    from datetime import UTC, datetime

    return watch.night_name(flow_run.parameters.get("config"), datetime.now(UTC).date())


@flow(name="nightly", flow_run_name=nightly_run_name, persist_result=False)
def nightly(config: NightlyConfig) -> dict:
    log = get_run_logger()
    home = str(dojoflow_home(config.resolved_home))
    t = nightly_tasks(home)

    # 1. Newest commit of every watched branch (concurrently, one task each)
    futures = [(repo, t.check_repository.submit(repo)) for repo in config.watch]
    checked = [watch.checked_from(repo, future.result(raise_on_failure=False)) for repo, future in futures]

    # 2. What moved since the last successful night
    state = t.load_state(home)
    changed = watch.changed_since(checked, state)
    night = str(flow_run.id or "local")
    emit(*(events.new_commit(r.label, r.url_or_path, r.branch, c, state.commit_of(r), night) for r, c in changed))

    # 3. Curriculum over the changed repositories, as a subflow (nothing new: finish now)
    retraining = None
    if changed:
        log.info("new commits in %s", ", ".join(f"{r.label}@{c[:12]}" for r, c in changed))
        run = curriculum(config=watch.pipeline_for(config, changed, home), return_state=True)
        retraining = watch.retraining_outcome(changed, run.result(raise_on_failure=False))

        # 4. Record the commits that were trained on, and only those
        if retraining.trained:
            t.record_state(home, retraining.trained, night)
    else:
        log.info("nothing changed in %d watched repositories", len(checked))

    # 5. The report, whatever happened
    create_markdown_artifact(
        key="nightly-report",
        markdown=watch.summary_markdown(checked, changed, state, retraining),
        description="What the nightly run checked and did",
    )

    # 6. Fail the run if any part of it failed
    watch.raise_for_failures(checked, retraining)
    return watch.night_result(checked, changed, retraining)
