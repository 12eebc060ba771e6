"""The examples in docstrings run, and say what the code does (issue 15: run the doctests).

Every module under storage/, tasks/ and flows/ whose source holds a `>>>` example is
found here and run with doctest, so a new example is tested without a list to update.
The same from the command line:

PYTHONPATH=$PWD python -m pytest --doctest-modules storage/lean_text.py tasks/yaml_config.py
"""

from __future__ import annotations

import doctest
import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = re.compile(r"^\s*>>> ", re.MULTILINE)


def modules_with_examples() -> list[str]:
    names = []
    for package in ("storage", "tasks", "flows"):
        for path in sorted((ROOT / package).rglob("*.py")):
            if EXAMPLE.search(path.read_text(encoding="utf-8")):
                rel = path.relative_to(ROOT).with_suffix("")
                names.append(".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts))
    return names


def test_the_examples_are_found():
    assert {"storage.lean_text", "storage.tactic_text", "tasks.yaml_config", "tasks.grpo.rewards"} <= set(
        modules_with_examples()
    )


@pytest.mark.parametrize("name", modules_with_examples())
def test_doctests(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS, verbose=False, report=True)
    assert result.attempted > 0, f"{name} has `>>>` outside any docstring doctest finds"
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples in {name} failed (printed above)"
