"""BackendSettings: the `backend:` section, as users write it in YAML.

PYTHONPATH=$PWD .venv/bin/python -m pytest tests/tasks/test_lean_config.py -q
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from tasks.lean import BackendSettings
from tasks.lean.guard import DEFAULT_ALLOWED_AXIOMS

DOC = Path(__file__).resolve().parents[2] / "docs" / "lean-backends.md"


def test_the_documented_yaml_example_loads():
    example = re.search(r"```yaml\n(backend:.*?)```", DOC.read_text(), re.S).group(1)
    settings = BackendSettings.model_validate(yaml.safe_load(example)["backend"])
    assert (
        settings.kind == "repl" and settings.workers == 4 and settings.repl.projects == {"MyRepo": "/path/to/checkout"}
    )


def test_defaults_are_replay_with_the_core_axioms():
    settings = BackendSettings()
    assert settings.kind == "replay" and tuple(settings.allowed_axioms) == DEFAULT_ALLOWED_AXIOMS


@pytest.mark.parametrize(
    "bad",
    [
        {"kind": "lean4"},
        {"tactic_timeout_s": 0},
        {"workers": 0},
        {"repl": {"lake": "x"}},
        {"kimina": {"batch_size": 0}},
        {"timeout": 5},
    ],
)
def test_bad_settings_are_rejected_naming_the_field(bad):
    with pytest.raises(ValidationError) as err:
        BackendSettings.model_validate(bad)
    key = next(iter(bad))
    assert key in str(err.value)


def test_every_field_is_described():
    from tasks.lean.config import KiminaOptions, LeanDojoOptions, ReplOptions

    for model in (BackendSettings, ReplOptions, KiminaOptions, LeanDojoOptions):
        assert all(f.description for f in model.model_fields.values()), model.__name__
