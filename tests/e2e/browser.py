"""A headless Chromium driven over the DevTools protocol (CDP), for tests that must see a page
as a user's browser renders it (the Prefect UI). Only the standard library and `websockets`
(which Prefect already depends on); Debian's `chromium` package provides the browser.
"""

from __future__ import annotations

import base64
import itertools
import json
import shutil
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
    "--window-size=1400,1800",
    "--remote-debugging-port=0",
    "--remote-allow-origins=*",
]


def chromium_binary() -> str | None:
    return next((b for b in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if b), None)


class Browser:
    def __init__(self, binary: str, ceiling: float = 120.0):
        self.profile = Path(tempfile.mkdtemp(prefix="dojoflow-chromium-"))
        self.proc = subprocess.Popen(
            [binary, *CHROMIUM_FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        port_file = self.profile / "DevToolsActivePort"
        deadline = time.monotonic() + ceiling
        while not (port_file.exists() and port_file.read_text().strip()):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("chromium did not start its DevTools endpoint")
            time.sleep(0.1)
        port = port_file.read_text().split()[0]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=30) as r:  # noqa: S310
            page = next(t for t in json.load(r) if t["type"] == "page")
        from websockets.sync.client import connect

        self.ws = connect(page["webSocketDebuggerUrl"], max_size=None)
        self.ids = itertools.count(1)

    def call(self, method: str, **params) -> dict:
        i = next(self.ids)
        self.ws.send(json.dumps({"id": i, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv(timeout=120))
            if msg.get("id") == i:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})

    def evaluate(self, expression: str):
        res = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        return res.get("result", {}).get("value")

    def open(self, url: str) -> None:
        self.call("Page.enable")
        self.call("Page.navigate", url=url)

    def leave(self) -> None:
        """Navigate to about:blank: a Prefect UI page left open keeps polling the API and re-rendering
        (a flow run's page re-lays out every streamed log line) while the test goes on without it."""
        self.call("Page.navigate", url="about:blank")

    def wait_for(self, expression: str, ceiling: float = 180.0, every: float = 0.25):
        """The expression's value once truthy (an event in the page), or None at the ceiling."""
        deadline = time.monotonic() + ceiling
        while time.monotonic() < deadline:
            value = self.evaluate(expression)
            if value:
                return value
            time.sleep(every)
        return None

    def screenshot(self, path: Path) -> Path:
        data = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)["data"]
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        try:
            self.ws.close()
        finally:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
            shutil.rmtree(self.profile, ignore_errors=True)
