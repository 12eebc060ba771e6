"""Where and how Lean processes run: a working folder of their own, a minimal environment
(no tokens or keys), and a memory limit. See docs/lean-backends.md ("Containment").

LeanInteract starts the REPL as `[lake_path, "env", <repl>]` in the project folder, with
the caller's whole environment. Dojoflow gives it, as `lake_path`, a launcher written by
`write_launcher`: it runs this file as a script, which

- for `lake env PROGRAM ...` (starting a Lean process): makes a new folder under the
  sandbox's work root, moves there, and runs `lake -d <project> env PROGRAM ...`, so
  lake still finds the project's packages while the process works in its own folder;
- for anything else (`lake build`, `lake --version`): runs lake as asked, in the folder
  it was asked in;

in both cases with only the environment the sandbox's spec lists and the address-space
limit it names (`setrlimit(RLIMIT_AS)`, inherited by lake's children). This file imports
nothing from Dojoflow: it runs as `python -I sandbox.py SPEC ARGS...`.
"""

from __future__ import annotations

import json
import os
import shlex
import stat
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path


@dataclass(frozen=True)
class SandboxSpec:
    lake: str  # the real `lake` executable
    project: str  # the Lake project whose packages Lean sees
    work_root: str  # each Lean process gets a new folder under it
    env: dict[str, str]  # the whole environment of the Lean process
    memory_limit_mb: int | None  # address-space limit; None: none


def write_launcher(spec: SandboxSpec, folder: Path) -> Path:
    """Write `folder/lake` (an executable that runs lake inside the sandbox) and its spec."""
    folder.mkdir(parents=True, exist_ok=True)
    spec_path = folder / "sandbox.json"
    spec_path.write_text(json.dumps(asdict(spec)))
    launcher = folder / "lake"
    launcher.write_text(
        "#!/bin/sh\nexec "
        + " ".join(shlex.quote(p) for p in (sys.executable, "-I", str(Path(__file__).resolve()), str(spec_path)))
        + ' "$@"\n'
    )
    launcher.chmod(launcher.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP)
    return launcher


def limit_memory(memory_limit_mb: int | None) -> None:
    if memory_limit_mb is None:
        return
    import resource

    limit = memory_limit_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def main(argv: list[str]) -> None:
    spec = SandboxSpec(**json.loads(Path(argv[0]).read_text()))
    args = list(argv[1:])
    if args[:1] == ["env"]:
        os.makedirs(spec.work_root, exist_ok=True)
        os.chdir(tempfile.mkdtemp(prefix="lean-", dir=spec.work_root))
        args = ["-d", spec.project, *args]
    limit_memory(spec.memory_limit_mb)
    os.execve(spec.lake, [spec.lake, *args], spec.env)


if __name__ == "__main__":
    main(sys.argv[1:])
