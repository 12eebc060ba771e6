"""What the commands' options mean, decided below the CLI (tasks/grpo/command_line.py,
tasks/proving/sorry.py, tasks/watch/report.py): one case per line."""

from datetime import date

import pytest

from storage.errors import InputError
from tasks.config import prove_config_from_yaml
from tasks.grpo.command_line import backend_option, evaluate_fields, json_object_option, train_fields
from tasks.proving.config import ProveConfig
from tasks.proving.sorry import prove_config, prove_run_name
from tasks.watch import NightlyConfig, night_name

NONE = dict.fromkeys(
    ("algorithm", "model", "reward", "algo_config", "lora_rank", "backend", "num_generations", "lr", "epochs",
     "batch_size", "max_steps")
)  # fmt: skip


@pytest.mark.parametrize(
    "file_fields, options, expected",
    [
        ({}, {}, {"mode": "proof"}),
        ({}, {"algorithm": "dapo", "reward": "shaped"}, {"mode": "proof", "algorithm": "dapo", "reward_preset": "shaped"}),
        ({}, {"num_generations": 8}, {"mode": "proof", "training": {"num_generations": 8, "per_device_train_batch_size": 8}}),
        ({}, {"num_generations": 8, "batch_size": 16}, {"mode": "proof", "training": {"num_generations": 8, "per_device_train_batch_size": 16}}),
        ({}, {"lr": 1e-5, "epochs": 2.0, "max_steps": 3}, {"mode": "proof", "training": {"learning_rate": 1e-5, "num_train_epochs": 2.0, "max_steps": 3}}),
        ({}, {"lora_rank": 4}, {"mode": "proof", "lora": {"r": 4}}),
        ({}, {"backend": "repl"}, {"mode": "proof", "backend": {"kind": "repl"}}),
        ({}, {"algo_config": '{"dpo_coef": 0.5}'}, {"mode": "proof", "algorithm_config": {"dpo_coef": 0.5}}),
        ({"algorithm": "gspo", "training": {"learning_rate": 1e-6, "max_steps": 9}}, {"lr": 1e-5}, {"mode": "proof", "algorithm": "gspo", "training": {"learning_rate": 1e-5, "max_steps": 9}}),
    ],
)  # fmt: skip
def test_train_options_become_settings_fields_and_win_over_the_config_file(file_fields, options, expected):
    assert train_fields(file_fields, {**NONE, **options}) == expected


@pytest.mark.parametrize(
    "value, expected",
    [
        (None, None),
        ("repl", {"kind": "repl"}),
        ('{"kind": "kimina", "kimina": {"url": "http://x"}}', {"kind": "kimina", "kimina": {"url": "http://x"}}),
    ],
)
def test_backend_option(value, expected):
    assert backend_option(value) == expected


@pytest.mark.parametrize(
    "call, problem",
    [
        (lambda: backend_option("{nope"), "--backend: is not valid JSON"),
        (lambda: json_object_option("--algo-config", "[1]"), "--algo-config: must be a JSON object"),
        (lambda: json_object_option("--algo-config", "{"), "--algo-config: is not valid JSON"),
    ],
)
def test_a_bad_json_option_is_an_input_error_naming_it(call, problem):
    with pytest.raises(InputError, match=problem):
        call()


def test_evaluate_options_become_settings_fields():
    assert evaluate_fields(8, 32, 0.5, "repl") == {
        "mode": "proof",
        "evaluation": {"k": 8, "max_new_tokens": 32, "temperature": 0.5},
        "backend": {"kind": "repl"},
    }


def test_prove_options_win_over_the_config_file(tmp_path):
    path = tmp_path / "prove.yaml"
    path.write_text("repos: [A]\ntheorems: [t]\nout: /tmp/o\n")
    cfg = prove_config(path, read=prove_config_from_yaml, repos=["B", "C"], checkpoint=tmp_path, unsafe_no_sandbox=True)
    assert (cfg.repos, cfg.theorems, cfg.checkpoint, cfg.out) == (["B", "C"], ["t"], str(tmp_path), "/tmp/o")
    assert cfg.proving.backend.sandbox.unsafe_no_sandbox
    assert prove_config(None, read=prove_config_from_yaml) == ProveConfig()


@pytest.mark.parametrize(
    "repos, name",
    [
        ([], "prove all repositories"),
        (["NatBasics"], "prove NatBasics"),
        (["https://github.com/o/NatBasics/", "ListLemmas"], "prove NatBasics, ListLemmas"),
    ],
)
def test_prove_run_name(repos, name):
    assert prove_run_name(ProveConfig(repos=repos)) == name


@pytest.mark.parametrize(
    "config, name",
    [
        (None, "nightly 2026-11-24"),
        ({"pipeline": {"name": "nightly"}}, "nightly 2026-11-24"),
        ({"pipeline": {"name": "mathlib"}}, "nightly mathlib 2026-11-24"),
        ({"pipeline": None}, "nightly 2026-11-24"),
    ],
)
def test_night_name(config, name):
    assert night_name(config, date(2026, 11, 24)) == name


def test_night_name_of_a_config_object():
    watch = [{"url_or_path": "https://github.com/o/r"}]
    config = NightlyConfig.model_validate({"watch": watch, "pipeline": {"name": "mathlib"}})
    assert night_name(config, date(2026, 11, 24)) == "nightly mathlib 2026-11-24"
