"""Flow runs that should page someone, each run as `python -m tests.e2e.alerting_runs MODE ...`
against the server PREFECT_API_URL names (tests/e2e/test_automations.py); prints the flow run id.

    regress HOME ROOT   a two-step curriculum with the forgetful test trainer: a planted regression
    nightly HOME REPO   a nightly watching a branch that does not exist: it fails
    publish HOME PATH   a flow that emits dojoflow.checkpoint.published for an SFT checkpoint at PATH,
                        trained (not cached) at the run's last step
    all HOME ROOT NIGHT_HOME REPO PATH   the three, in one process (prints the three ids)
"""

from __future__ import annotations

import sys
from pathlib import Path


def regress(home: str, root: str) -> str:
    from flows.curriculum import curriculum
    from tasks.trainers import registry
    from tests.flows.fixtures import config
    from tests.forgetful_trainer import FORGETFUL

    registry.register(FORGETFUL)
    cfg = config(Path(root), Path(home), n=2, order="as_given")
    cfg = cfg.model_validate({**cfg.model_dump(), "trainers": {"sft": None, "forgetful": {}}})
    cfg.evaluation.regression_margin = 0.1
    state = curriculum(config=cfg, return_state=True)
    state.result()
    return str(state.state_details.flow_run_id)


def nightly(home: str, repo: str) -> str:
    from flows.nightly import nightly as nightly_flow
    from tasks.config import PipelineConfig
    from tasks.watch import NightlyConfig, WatchedRepo

    watched = WatchedRepo(url_or_path=repo, branch="no-such-branch", name="typo")
    cfg = NightlyConfig(
        watch=[watched], home=home, pipeline=PipelineConfig(name="n", sources=[], trainers={"sft": None})
    )
    state = nightly_flow(config=cfg, return_state=True)
    assert state.is_failed(), state
    return str(state.state_details.flow_run_id)


def publish(home: str, path: str) -> str:
    from prefect import flow
    from prefect.runtime import flow_run

    from tasks import events
    from tasks.prefect_tasks.events import emit

    @flow(name="curriculum")
    def fake_step() -> str:
        ref = {"checkpoint_id": "c" * 16, "trainer": "sft", "path": path, "snapshot_id": "s" * 16, "parent_id": None}
        emit(events.checkpoint_published(ref, home, 2, 2, "NatBasics", str(flow_run.id), "e2e", cached=False))
        return str(flow_run.id)

    return fake_step()


if __name__ == "__main__":
    mode, *args = sys.argv[1:]
    if mode == "all":  # one process (one import of Prefect and the flows) for the three
        home, root, night_home, repo, path = args
        run_ids = [regress(home, root), nightly(night_home, repo), publish(home, path)]
    else:
        run_ids = [{"regress": regress, "nightly": nightly, "publish": publish}[mode](*args)]
    from prefect.events.worker import EventsWorker

    EventsWorker.drain_all()
    print(" ".join(run_ids))
