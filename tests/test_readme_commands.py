"""The README's two commands (issue 26): running installs what running needs, the tests add `dev`
and run on two pytest-xdist workers, and CI runs that very test command."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _section_command(title: str) -> str:
    text = (ROOT / "README.md").read_text()
    section = text.split(f"## {title}", 1)[1]
    return re.search(r"```bash\n(.*?)\n```", section, re.S).group(1)


def test_the_run_command_installs_no_extra_and_the_test_command_adds_dev_and_three_workers():
    run = _section_command("Run it")
    assert "pip install -e . " in run and "[dev]" not in run and "dojoflow run" in run
    tests = _section_command("Run the tests")
    assert "pip install -e '.[dev]'" in tests and "pytest -n 3" in tests
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert any(d.startswith("pytest-xdist") for d in extras["dev"])


def test_ci_runs_the_readmes_test_command_and_pytest_prints_the_15_slowest():
    ci = (ROOT / ".ci" / "run").read_text()
    assert ".venv/bin/python -m pytest -n 3\n" in ci
    addopts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["addopts"]
    assert "--durations=15" in addopts
    # each file on one worker (module fixtures made once), the longest files first (tests/conftest.py)
    assert "--dist loadfile" in addopts and "--no-loadscope-reorder" in addopts
    from tests.conftest import LONGEST_FILES_FIRST

    assert [f for f in LONGEST_FILES_FIRST if not (ROOT / f).is_file()] == []


def test_every_config_a_readme_command_names_exists():
    """The README's `prove` example named `my-prove.yaml`, which exists nowhere (issue 26)."""
    text = (ROOT / "README.md").read_text()
    commands = [line for line in text.splitlines() if line.startswith(".venv/bin/dojoflow ")]
    named = {word for line in commands for word in line.split("#")[0].split() if word.endswith((".yaml", ".yml"))}
    shown = set(re.findall(r"```yaml\n# (\S+\.yaml)\n", text))  # a config the README itself writes out
    missing = sorted(n for n in named - shown if not (ROOT / n).is_file())
    assert named and not missing, missing
