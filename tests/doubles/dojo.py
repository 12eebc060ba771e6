"""Put the `lean_dojo` test double (tests/doubles/dojo_package/) where the Dojo worker finds it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent / "dojo_package" / "lean_dojo"


def make_dojo_double(folder: Path) -> Path:
    """Copy the double into `folder` (with lean-dojo 4.20.0's dist-info); return `folder`, to put
    on `backend.leandojo.extra_pythonpath`. What it receives is logged to `folder/received.jsonl`."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copytree(PACKAGE, folder / "lean_dojo")
    dist = folder / "lean_dojo-4.20.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: lean-dojo\nVersion: 4.20.0\n")
    return folder


def dojo_received(folder: Path) -> list[dict]:
    log = folder / "received.jsonl"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
