"""The nightly flow: retrain when watched repositories get new commits.

    prefect deployment run 'nightly/nightly'          # as deployed by prefect.yaml (02:00 UTC)
    python -c "from flows.nightly import nightly; from tasks.watch import NightlyConfig; \
nightly(NightlyConfig.from_yaml('examples/nightly.yaml'))"

1. Read the newest commit of every watched branch (`git ls-remote`, no clone; one task each).
2. Nothing new: finish at once, with a markdown artifact listing the commits checked.
3. Otherwise run the curriculum flow as a subflow over the changed repositories
   (`repo` + `commit` sources, traced inside its ingest task), with the trainer and
   evaluation settings of `config.pipeline`.
4. Only once that run succeeded, record the new commits in `<home>/nightly/state.json`,
   so a failed night is redone the next night.

A repository whose check fails (after retries, for network errors) is reported and makes
the run fail at the end, once the others have been processed.
"""

from __future__ import annotations

from prefect import flow, get_run_logger, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE
from prefect.runtime import flow_run

from flows.curriculum import curriculum
from flows.ui import error_of
from storage.errors import DojoflowError
from storage.store import dojoflow_home
from tasks import watch
from tasks.watch import NightlyConfig, WatchedRepo


def _transient(task, task_run, state) -> bool:
    """Retry only errors that say a retry can help (storage/errors.py)."""
    try:
        state.result()
    except Exception as e:  # noqa: BLE001
        return bool(getattr(e, "transient", False))
    return False


@task(name="check-repository", task_run_name="check[{repo.label}]", cache_policy=NO_CACHE,
      retries=2, retry_delay_seconds=30, retry_condition_fn=_transient)
def check_task(repo: WatchedRepo) -> str:
    return watch.latest_commit(repo)


@task(name="record-nightly-state", cache_policy=NO_CACHE)
def record_task(home: str, processed: list[tuple[WatchedRepo, str]], run_id: str) -> int:
    watch.record_processed(home, processed, run_id)
    return len(processed)


class WatchCheckFailed(DojoflowError):
    """Some watched repositories could not be checked (their errors are in the artifact)."""


@flow(name="nightly", flow_run_name="nightly[{config.pipeline.name}]", persist_result=False)
def nightly(config: NightlyConfig) -> dict:
    log = get_run_logger()
    home = str(dojoflow_home(config.resolved_home))
    state = watch.load_state(home)

    # 1. Newest commit of every watched branch (concurrently, one task each)
    futures = [(repo, check_task.submit(repo)) for repo in config.watch]
    checked = []
    for repo, future in futures:
        future.wait()
        s = future.state
        checked.append({"repo": repo, "commit": s.result() if s.is_completed() else None,
                        "error": None if s.is_completed() else error_of(s)})
    heads = {c["repo"].key: c["commit"] for c in checked if c["commit"]}
    changed = watch.changed_repositories([c["repo"] for c in checked if c["commit"]], state, heads)

    run = None
    if not changed:
        # 2. Nothing new: finish now (the artifact lists the commits checked)
        log.info("nothing changed in %d watched repositories", len(checked))
    else:
        # 3. Curriculum over the changed repositories, as a subflow
        log.info("new commits in %s", ", ".join(f"{r.label}@{c[:12]}" for r, c in changed))
        run = curriculum(config=watch.pipeline_for(config, changed, home))
        # 4. Record the commits only now that the run succeeded
        record_task(home, watch.succeeded(changed, run["failures"]), str(flow_run.id or "local"))
    create_markdown_artifact(key="nightly-report", markdown=watch.summary_markdown(checked, changed, state, run),
                             description="What the nightly run checked and did")

    failed = [c for c in checked if c["error"]]
    if failed:
        raise WatchCheckFailed("; ".join(f"{c['repo'].label}: {c['error']}" for c in failed))
    return {"checked": {c["repo"].key: c["commit"] for c in checked},
            "changed": {r.key: commit for r, commit in changed},
            "report": run["report"] if run else None}
