"""Bad input to `grpo train` and `prove` is refused before torch, TRL or transformers load
(issue 15 B: cheap checks ran after 5-30 s of heavy imports). Each case runs in a process of
its own, so `sys.modules` shows what the refusal cost."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml

from tests.doubles.sample_store import sample_store

HEAVY = ("torch", "trl", "transformers", "peft", "pytorch_lightning", "lightning")

PROBE = """
import json, sys
from typer.testing import CliRunner
from flows.cli import app
heavy = sys.argv[1].split(",")
r = CliRunner().invoke(app, sys.argv[2:])
print(json.dumps({"code": r.exit_code, "output": r.output, "heavy": [m for m in heavy if m in sys.modules]}))
"""


def refuse(*args) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, ",".join(HEAVY), *map(str, args)], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture
def home(tmp_path):
    home = tmp_path / "home"
    sample_store(home)
    return home


def test_the_probe_sees_a_heavy_import():
    done = subprocess.run(
        [sys.executable, "-c", "import sys, torch; print('torch' in sys.modules)"], capture_output=True, text=True
    )
    assert done.stdout.strip() == "True"  # so an empty list below means torch was not loaded


@pytest.mark.parametrize(
    ("extra", "message"),
    [(["--lr", "nan"], "not a finite number"), (["-a", "nosuch"], "nosuch")],
)
def test_grpo_train_refuses_bad_options_before_heavy_imports(home, tmp_path, extra, message):
    theorems = tmp_path / "t.jsonl"
    theorems.write_text(json.dumps({"name": "t", "statement": "theorem t : 1 = 1"}) + "\n")
    r = refuse("grpo", "train", theorems, *extra, "-o", tmp_path / "out", "--home", home)
    assert r["code"] == 2 and message in r["output"], r
    assert r["heavy"] == []


def test_prove_refuses_a_checkpoint_that_is_a_file_before_heavy_imports(home, tmp_path):
    config = tmp_path / "prove.yaml"
    config.write_text(yaml.safe_dump({"proving": {"backend": {"kind": "replay"}}}))
    (tmp_path / "file").write_text("x")
    r = refuse("prove", config, "--checkpoint", tmp_path / "file", "--home", home)
    assert r["code"] == 2 and "file" in r["output"], r
    assert r["heavy"] == []


def test_a_bad_benchmark_file_in_a_run_config_is_refused_before_the_trainers_checks_import_torch(tmp_path):
    """The trainers' checks import torch/TRL: 245-300 s on a loaded machine to say a path is wrong (issue 26)."""
    bench = tmp_path / "bench.jsonl"
    bench.write_text('{"name": "b", "statement": \n')
    config = tmp_path / "run.yaml"
    config.write_text(
        yaml.safe_dump({"sources": [{"sample": "NatBasics"}], "benchmarks": [{"name": "b", "path": str(bench)}]})
    )
    r = refuse("run", config, "--home", tmp_path / "home")
    assert r["code"] == 2 and "bench.jsonl" in r["output"] and "line 1" in r["output"], r["output"]
    assert r["heavy"] == [], f"refused after importing {r['heavy']}"


def test_a_launch_with_more_processes_than_the_machine_has_is_refused_before_the_trainers_checks_import_torch(
    tmp_path,
):
    """The trainers' `launch:` checks count GPUs and CPUs without torch; they ran after each
    trainer's own checks, which import torch/TRL (every trainer's quick checks now come first)."""
    config = tmp_path / "run.yaml"
    config.write_text("launch: {processes: 4096}\ntrainers: {sft: {training: {max_steps: 1}}}\n")
    r = refuse("run", config, "--home", tmp_path / "home")
    assert r["code"] == 2 and "trainers.sft.launch.processes: is 4096" in r["output"], r["output"]
    assert r["heavy"] == [], f"refused after importing {r['heavy']}"
