"""The run report as a user sees it in the Prefect UI: `dojoflow server start` on a free port
(the project's Prefect home), `dojoflow run examples/tiny.yaml` against it, and the report
artifact opened in a real headless Chromium, which must load the plot (naturalWidth > 0).

Needs Debian's `chromium` (`.ci/run` installs it); skipped with that reason without it.
The screenshot is kept as `report-in-ui.png` in the test's tmp folder.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from tasks.report import PLOT_ALT

from .browser import Browser, chromium_binary

ROOT = Path(__file__).resolve().parents[2]


def dojoflow(*args: str, check: bool = True, timeout: float = 900) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "DOJOFLOW_"))}
    env.update(PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1")
    res = subprocess.run(
        [sys.executable, "-m", "flows.cli", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
    assert not check or res.returncode == 0, f"dojoflow {' '.join(args)}: {res.returncode}\n{res.stdout}\n{res.stderr}"
    return res


def artifacts(api: str) -> dict[str, dict]:
    req = urllib.request.Request(f"{api}/artifacts/filter", data=b"{}", headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:  # noqa: S310
        return {a["key"]: a for a in json.load(r) if a["key"]}


@pytest.mark.e2e
def test_the_report_plot_renders_in_the_prefect_ui_of_dojoflow_server(tmp_path, ui_server):
    binary = chromium_binary()
    if binary is None:
        pytest.skip("chromium is not installed (Debian: apt-get install -y chromium; .ci/run does this)")
    home, ui = ui_server  # `dojoflow server start` (tests/e2e/conftest.py), stopped at the session's end
    assert dojoflow("server", "status", "--home", str(home)).stdout.startswith(f"Prefect server running: {ui}")
    run = dojoflow("run", str(ROOT / "examples" / "tiny.yaml"), "--home", str(home))
    assert "(started by `dojoflow server start`)" in run.stdout, run.stdout

    found = artifacts(f"{ui}/api")
    report, table = found["tiny-report"], found["tiny-metrics"]
    assert f"![{PLOT_ALT}](data:image/png;base64," in report["data"]
    values = [r["value"] for r in json.loads(table["data"]) if isinstance(r.get("value"), float)]
    assert values and all(v == float(f"{v:.3g}") for v in values), values  # a few significant digits

    browser = Browser(binary)
    try:
        browser.open(f"{ui}/artifacts/artifact/{report['id']}")
        loaded = browser.wait_for(
            f"Array.from(document.images).filter(i => i.alt === {PLOT_ALT!r} && i.complete).map(i => i.naturalWidth)"
        )
        browser.screenshot(tmp_path / "report-in-ui.png")
        text = browser.evaluate("document.body.innerText")
    finally:
        browser.close()
    assert loaded and loaded[0] > 0, f"the plot did not load in the UI; page text:\n{text}"
    assert "Repositories in curriculum order" in text
