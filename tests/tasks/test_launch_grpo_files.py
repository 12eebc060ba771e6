"""`dojoflow grpo train` (theorem files) is launched as the curriculum's trainers are
(tasks/grpo/theorem_files.py `train_theorem_file`; docs/scaling.md): `--processes 2` trains in
torchrun's 2 processes (gloo, CPU), rank 0 publishes the checkpoint."""

from __future__ import annotations

import json

import pytest

from tests.doubles.sample_store import sample_store

THEOREMS = [  # lean-grpo's format; names of the sample's NatBasics theorems, so replay knows them
    {"name": "one_mul'", "statement": "theorem one_mul' (n : Nat) : 1 * n = n", "context": "", "imports": []},
    {"name": "mul_comm'", "statement": "theorem mul_comm' (n m : Nat) : n * m = m * n", "context": "", "imports": []},
]


def test_the_processes_option_sets_the_launch():
    from tasks.grpo.command_line import settings_from_fields, train_fields

    settings = settings_from_fields(train_fields({}, {"processes": 2}))
    assert settings.launch.processes == 2 and not settings.launch.in_process()
    assert settings_from_fields(train_fields({}, {})).launch is None  # default: in process


@pytest.mark.slow
def test_theorem_file_training_with_two_processes_runs_under_torchrun(tmp_path, monkeypatch):
    from tasks.grpo.command_line import settings_from_fields, train_fields
    from tasks.grpo.theorem_files import train_theorem_file

    home = tmp_path / "home"
    sample_store(home)
    monkeypatch.setenv("DOJOFLOW_HOME", str(home))
    theorem_file = tmp_path / "theorems.jsonl"
    theorem_file.write_text("".join(json.dumps(t) + "\n" for t in THEOREMS))
    settings = settings_from_fields(train_fields({}, {"num_generations": 2, "max_steps": 1, "processes": 2}))
    out, work = tmp_path / "out", tmp_path / "work"
    figures = train_theorem_file(settings, str(theorem_file), out, work, str(home), model_cache_dir=home / "models")
    assert figures["world_size"] == 2  # written by the worker's rank 0 (tasks/trainers/worker.py)
    assert figures["steps"] == 1 and figures["matched_in_store"] == 2
    assert json.loads((out / "dojoflow_model.json").read_text())["settings"]["launch"]["processes"] == 2
    assert json.loads((out / "grpo_history.json").read_text())
    assert (work / "launch" / "job.json").is_file()
