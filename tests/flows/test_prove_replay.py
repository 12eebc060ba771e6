"""`dojoflow prove` as the README shows it: the shipped example config is valid, a replay run says
that replay cannot prove a `sorry` theorem (it re-finds traced proofs only), and the run has a
name in `dojoflow runs` and the UI."""

from __future__ import annotations

from pathlib import Path

import yaml
from typer.testing import CliRunner

from flows.cli import REPLAY_CANNOT_PROVE_SORRY, app
from flows.prove import prove_run_name
from tasks.proving.config import ProveConfig
from tests.doubles.openai_endpoint import EndpointDouble
from tests.doubles.sample_store import sample_store

ROOT = Path(__file__).resolve().parents[2]


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False, env={"COLUMNS": "300"})


def test_the_shipped_prove_example_is_a_valid_prove_config_for_a_lean_backend():
    cfg = ProveConfig.from_yaml(ROOT / "examples" / "prove.yaml")
    assert cfg.proving.backend.kind == "repl" and cfg.proving.generator.kind == "checkpoint"


def test_prove_run_names():
    assert prove_run_name(ProveConfig(repos=["NatBasics"])) == "prove NatBasics"
    assert prove_run_name(ProveConfig(repos=["https://github.com/u/ListLemmas@abc", "x"])) == "prove ListLemmas@abc, x"
    assert prove_run_name(ProveConfig()) == "prove all repositories"


def test_a_replay_prove_says_replay_cannot_prove_sorry_and_the_run_is_named(prefect, tmp_path):
    home = tmp_path / "home"
    sample_store(home)
    config = tmp_path / "prove.yaml"
    with EndpointDouble({}) as endpoint:
        generator = {"kind": "endpoint", "endpoint": {"url": endpoint.url, "model": "double", "api_key_env": None}}
        proving = {"backend": {"kind": "replay"}, "generator": generator, "num_tactics": 1, "max_expansions": 2}
        config.write_text(yaml.safe_dump({"proving": proving}))
        r = invoke("prove", config, "--repo", "NatBasics", "--home", home)
    assert r.exit_code == 0, r.output
    assert REPLAY_CANNOT_PROVE_SORRY.split(":")[0] in r.output and "proves no `sorry` theorem" in r.output
    runs = invoke("runs", "--home", home, "--format", "json")
    assert '"name": "prove NatBasics"' in runs.output, runs.output


def test_a_prove_run_publishes_its_results_card_as_an_artifact(prefect, tmp_path):
    import httpx
    from prefect.settings import PREFECT_API_URL

    from flows.prove import prove

    home = tmp_path / "home"
    sample_store(home)
    with EndpointDouble({}) as endpoint:
        generator = {"kind": "endpoint", "endpoint": {"url": endpoint.url, "model": "double", "api_key_env": None}}
        proving = {"backend": {"kind": "replay"}, "generator": generator, "num_tactics": 1, "max_expansions": 2}
        result = prove(config=ProveConfig(home=str(home), repos=["NatBasics"], proving=proving))
    card = Path(result["card"]).read_text()
    assert Path(result["card"]) == home / "reports" / result["run_id"] / "card.md"
    assert f"## `sorry` theorems tried ({result['theorems']})" in card
    assert "Proved 0 of" in card and "decided by `replay`" in card and "a `sorry` theorem has none" in card
    body = {"artifacts": {"flow_run_id": {"any_": [result["run_id"]]}}}
    api = PREFECT_API_URL.value()
    artifacts = httpx.post(f"{api}/artifacts/filter", json=body, timeout=30).raise_for_status().json()
    (published,) = [a for a in artifacts if a["key"] == "prove-natbasics-card"]
    assert published["type"] == "markdown" and "## `sorry` theorems tried" in published["data"]
