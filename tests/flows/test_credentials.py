"""A repository URL holding a token (issue 8, item 2): refused before anything runs, with a
message that names the field, hides the secret and points to git credential helpers; and
the token is in no output and no file the command leaves (store, catalog, Prefect database).

The commands run as real `dojoflow` processes; the URL points at a closed port of the
loopback interface, so even a leak would reach no network."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from storage.errors import InputError
from storage.synthetic import write_synthetic_export
from tasks.watch import NightlyConfig

TOKEN = "ghp_LeakCanary0123456789"
URL = f"http://user:{TOKEN}@127.0.0.1:1/x.git"
REDACTED = "http://***@127.0.0.1:1/x.git"
ROOT = Path(__file__).resolve().parents[2]


def dojoflow(*args, cwd: Path) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "HF_HUB_OFFLINE": "1",
        "COLUMNS": "200",
        "DOJOFLOW_HOME": str(cwd / "default-home"),
    }
    return subprocess.run(
        [sys.executable, "-m", "flows.cli", *map(str, args)],
        cwd=cwd,
        env=env,
        text=True,
        capture_output=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def files_holding(root: Path, secret: str) -> list[Path]:
    """Every file under `root` whose bytes contain `secret` (plain or UTF-16, as databases may store it)."""
    needles = (secret.encode(), secret.encode("utf-16-le"))
    return [p for p in root.rglob("*") if p.is_file() and any(n in p.read_bytes() for n in needles)]


@pytest.mark.parametrize("command", ["run", "trace", "import"])
def test_a_token_in_a_repository_url_is_refused_and_written_nowhere(tmp_path, command):
    home, work = tmp_path / "home", tmp_path / "work"  # the config (which holds the token) is outside both
    work.mkdir()
    if command == "run":
        config = tmp_path / "run.yaml"
        config.write_text(f"name: leak-check\nsources:\n  - repo: {URL}\n    commit: {'a' * 40}\n")
        res = dojoflow("run", config, "--home", home, cwd=work)
        field = "sources[].repo"
    elif command == "trace":
        res = dojoflow("trace", URL, "--commit", "a" * 40, "--home", home, cwd=work)
        field = "repository url"
    else:  # an export whose theorems name the repository by such a URL
        export = write_synthetic_export(tmp_path / "export", "leaky", 4, 2)
        for f in export.rglob("*.json*"):
            f.write_text(f.read_text().replace("https://dojoflow.invalid/synthetic/leaky", URL))
        res = dojoflow("import", export, "--home", home, cwd=work)
        field = "record 0"
    output = res.stdout + res.stderr
    assert res.returncode == 2, output
    assert TOKEN not in output and "Traceback" not in output
    assert REDACTED in output and field in output and "credential helper" in output
    assert files_holding(work, TOKEN) == [] and files_holding(home, TOKEN) == []  # store, catalog, Prefect db


def test_a_watched_url_with_a_token_is_refused_naming_the_field(tmp_path):
    config = tmp_path / "nightly.yaml"
    config.write_text(f"watch:\n  - url_or_path: {URL}\n    branch: main\n")
    with pytest.raises(InputError) as e:
        NightlyConfig.from_yaml(config)
    assert e.value.where == "watch[].url_or_path" and e.value.source == REDACTED
    assert TOKEN not in str(e.value) and "credential helper" in str(e.value)
