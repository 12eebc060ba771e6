"""Dojoflow's Prefect events, read back from the tests' Prefect server through its API
(`/events/filter`), emitted by real flow runs: a curriculum whose later step makes an earlier
repository worse (a planted regression), a source that fails, and a nightly that sees a new
commit. The figures themselves are tested in tests/tasks/test_events.py.

    .venv/bin/python -m pytest tests/flows/test_events.py -q -p no:cacheprovider
"""

from __future__ import annotations

import time

import httpx
import pytest

from tasks import events
from tasks.trainers import registry
from tests.forgetful_trainer import FORGETFUL

from .fixtures import config, train_states

EVENT_CEILING_S = 120  # the server persists events in batches; only a lost event reaches this


@pytest.fixture
def forgetful():
    registry.register(FORGETFUL)
    yield
    registry.unregister("forgetful")


def read_events(flow_run_id, names: set[str], count: int) -> list[dict]:
    """The events named `names` related to the flow run, once `count` of them are stored."""
    from prefect.events.worker import EventsWorker
    from prefect.settings import PREFECT_API_URL

    EventsWorker.drain_all()  # every event this process emitted is sent
    body = {
        "filter": {
            "event": {"name": sorted(names)},
            "any_resource": {"id": [f"prefect.flow-run.{flow_run_id}"]},
            "order": "ASC",
        },
        "limit": 50,
    }
    deadline = time.monotonic() + EVENT_CEILING_S
    while True:
        found = httpx.post(f"{PREFECT_API_URL.value()}/events/filter", json=body, timeout=30).raise_for_status()
        found = found.json()["events"]
        if len(found) >= count or time.monotonic() > deadline:
            return found
        time.sleep(0.5)


def test_a_later_step_that_makes_an_earlier_repository_worse_emits_metric_regressed(prefect, tmp_path, forgetful):
    from flows.curriculum import curriculum

    cfg = config(tmp_path, tmp_path / "home", n=2, order="as_given")
    cfg = cfg.model_validate({**cfg.model_dump(), "trainers": {"sft": None, "forgetful": {}}})
    cfg.evaluation.regression_margin = 0.1
    state = curriculum(config=cfg, return_state=True)
    result = state.result()
    assert train_states(result, "forgetful") == ["Completed", "Completed"]
    run_id = state.state_details.flow_run_id
    first = result["steps"][0]["name"]

    wanted = {events.METRIC_REGRESSED, events.CHECKPOINT_PUBLISHED}
    found = read_events(run_id, wanted, 2 + 3)  # 2 checkpoints; 3 splits regressed on the first repository
    published = [e for e in found if e["event"] == events.CHECKPOINT_PUBLISHED]
    regressed = [e for e in found if e["event"] == events.METRIC_REGRESSED]
    assert [e["payload"]["step"] for e in published] == [1, 2]
    ckpt = result["steps"][1]["trainers"]["forgetful"]["checkpoint"]
    assert published[1]["resource"]["prefect.resource.id"] == f"dojoflow.checkpoint.{ckpt['checkpoint_id']}"
    assert published[1]["payload"]["path"] == ckpt["path"] and published[1]["payload"]["cached"] is False
    labels = [
        {k: e["resource"][k] for k in ("dojoflow.trainer", "dojoflow.cached", "dojoflow.last-step")} for e in published
    ]
    assert labels == [
        {"dojoflow.trainer": "forgetful", "dojoflow.cached": "false", "dojoflow.last-step": last}
        for last in ("false", "true")
    ]  # what deployments/automations.yaml's prove trigger matches on
    roles = {r["prefect.resource.role"] for r in published[1]["related"]}
    assert {"snapshot", "learned", "run", "flow-run", "flow"} <= roles  # Prefect adds the flow run's resources

    assert sorted(e["payload"]["split"] for e in regressed) == ["test", "train", "val"]
    for e in regressed:  # only the earlier repository, at the later step
        assert e["resource"]["prefect.resource.id"] == f"dojoflow.repo.{first}"
        p = e["payload"]
        assert (p["metric"], p["direction"], p["learned_step"], p["step"]) == ("top1_accuracy", "higher", 1, 2)
        assert (p["value_when_learned"], p["value"], p["margin"]) == (0.9, 0.2, 0.1)
        assert p["interval_when_learned"] == [0.83, 0.95] and p["threshold"] == pytest.approx(0.73)
        assert p["worse_by"] == pytest.approx(0.7) and p["run_id"] == str(run_id)

    # A margin larger than the drop: no regression event
    cfg.evaluation.regression_margin = 0.9
    cfg.home = str(tmp_path / "home2")
    state = curriculum(config=cfg, return_state=True)
    state.result()
    again = read_events(state.state_details.flow_run_id, wanted, 2)
    assert [e["event"] for e in again] == [events.CHECKPOINT_PUBLISHED] * 2


def test_a_source_that_fails_emits_trace_failed_with_its_error(prefect, tmp_path, forgetful):
    from flows.curriculum import curriculum
    from tasks.config import SourceConfig

    missing = SourceConfig(repo=str(tmp_path / "no-such-repo"), name="missing")
    cfg = config(tmp_path, tmp_path / "home", n=1)
    cfg = cfg.model_validate(
        {**cfg.model_dump(), "trainers": {"sft": None, "forgetful": {}}, "continue_on_source_failure": True}
    )
    cfg.sources.insert(0, missing)
    state = curriculum(config=cfg, return_state=True)
    assert state.result()["failures"][0]["source"] == "missing"
    [failed] = read_events(state.state_details.flow_run_id, {events.TRACE_FAILED}, 1)
    assert failed["resource"]["prefect.resource.id"] == "dojoflow.repo.missing"
    assert failed["payload"]["repo"] == str(tmp_path / "no-such-repo")
    assert "does not exist" in failed["payload"]["error"] and failed["payload"]["pipeline"] == "test"


def test_a_nightly_that_sees_a_new_commit_emits_new_commit_with_both_commits(prefect, tmp_path):
    from flows.nightly import nightly
    from tasks.watch import WatchedRepo, record_processed
    from tests.flows.test_nightly import commit_file, git, nightly_config

    repo_path = tmp_path / "Lemmas"
    repo_path.mkdir()
    git(repo_path, "init", "-q", "-b", "main")
    old = commit_file(repo_path, "Lemmas.lean", "theorem t : 1 + 1 = 2 := rfl\n")
    repo = WatchedRepo(url_or_path=str(repo_path), branch="main")
    record_processed(tmp_path / "home", [(repo, old)], run_id="an-earlier-night")
    new = commit_file(repo_path, "More.lean", "theorem u : True := trivial\n")

    state = nightly(config=nightly_config(tmp_path / "home", repo), return_state=True)  # tracing fails: no Lean
    assert state.is_failed()
    [seen] = read_events(state.state_details.flow_run_id, {events.NEW_COMMIT}, 1)
    assert seen["resource"]["prefect.resource.id"] == "dojoflow.repo.Lemmas"
    p = seen["payload"]
    assert (p["commit"], p["previous"], p["branch"], p["url"]) == (new, old, "main", str(repo_path))
    assert p["run_id"] == str(state.state_details.flow_run_id)


def test_a_prove_run_emits_proof_found_with_its_counts(prefect, tmp_path):
    from flows.prove import prove
    from tasks.proving.config import ProveConfig
    from tests.doubles.openai_endpoint import EndpointDouble
    from tests.doubles.sample_store import sample_store

    home = tmp_path / "home"
    sample_store(home)
    with EndpointDouble({}) as endpoint:  # replay proves no `sorry` theorem: every count but `proved` is real
        generator = {"kind": "endpoint", "endpoint": {"url": endpoint.url, "model": "double", "api_key_env": None}}
        proving = {"backend": {"kind": "replay"}, "generator": generator, "num_tactics": 1, "max_expansions": 2}
        state = prove(config=ProveConfig(home=str(home), repos=["NatBasics"], proving=proving), return_state=True)
    result = state.result()
    [found] = read_events(state.state_details.flow_run_id, {events.PROOF_FOUND}, 1)
    assert found["resource"]["prefect.resource.id"] == f"dojoflow.run.{result['run_id']}"
    p = found["payload"]
    assert (p["tried"], p["proved"], p["untried"]) == (result["theorems"], 0, len(result["untried"]))
    assert p["repositories"] == {"NatBasics": {"tried": result["theorems"], "proved": 0}} and result["theorems"] > 0
    assert "dojoflow.repo.NatBasics" in {r["prefect.resource.id"] for r in found["related"]}
