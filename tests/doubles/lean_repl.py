"""Set up the Lean REPL double so that LeanInteract itself launches it.

LeanInteract starts the REPL as `[lake_path, "env", <local_repl_path>/.lake/build/bin/repl]`.
Here `local_repl_path` is a folder holding only a `lean-toolchain` file and, at that
path, a launcher of `lean_repl_double.py`; `lake_path` is a fake `lake` that runs
`env PROGRAM` (with or without `-d DIR`), answers `--version`, and does nothing for
`build` and `exe cache get` (it logs every call).
"""

from __future__ import annotations

import json
import shlex
import stat
import sys
from dataclasses import dataclass
from pathlib import Path

DOUBLE = Path(__file__).resolve().parent / "lean_repl_double.py"
CHECKOUT = DOUBLE.parents[2]
LEAN_TOOLCHAIN = "leanprover/lean4:v4.20.0\n"


@dataclass(frozen=True)
class ReplDouble:
    lake_path: Path  # the fake lake
    repl_path: Path  # LeanInteract's local_repl_path
    log_path: Path  # every request the double received, one JSON line each
    lake_log: Path  # every fake-lake call

    def requests(self) -> list[dict]:
        """What reached the double: [{"pid", "home", "cwd", "env_keys", "memory_limit", "request"}], in order."""
        if not self.log_path.exists():
            return []
        return [json.loads(line) for line in self.log_path.read_text().splitlines()]

    def processes(self, requests: list[dict]) -> set[str]:
        """The distinct processes that received `requests` (under bubblewrap each has pid 2 in
        its own PID namespace, and a private HOME of its own)."""
        return {f"{r['pid']}:{r.get('home', '')}" for r in requests}

    def received(self) -> str:
        """All request text the double received, concatenated."""
        return "\n".join(r["request"] for r in self.requests())

    def options(self, **extra) -> dict:
        """`backend.repl` options that point the repl backend at this double."""
        return {"lake_path": str(self.lake_path), "repl_path": str(self.repl_path), "build_repl": False, **extra}

    def sandbox(self, **extra) -> dict:
        """`backend.sandbox` settings under which the double runs in bubblewrap: Python and this
        checkout (the double's code, the sample it answers from) read-only, the double's
        folder (its logs) writable. Real Lean needs none of these."""
        return {
            "read_only_paths": [sys.prefix, sys.base_prefix, str(CHECKOUT)],
            "writable_paths": [str(self.log_path.parent)],
            **extra,
        }


def _executable(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def make_repl_double(folder: Path, *, crash_once_on: str | None = None, tactic_delay_ms: float = 0) -> ReplDouble:
    folder = Path(folder)
    log, lake_log = folder / "requests.jsonl", folder / "lake-calls.log"
    repl_dir = folder / "repl"
    (repl_dir).mkdir(parents=True, exist_ok=True)
    (repl_dir / "lean-toolchain").write_text(LEAN_TOOLCHAIN)
    args = [sys.executable, str(DOUBLE), "--log", str(log), "--tactic-delay-ms", str(tactic_delay_ms)]
    if crash_once_on:
        args += ["--crash-once-on", crash_once_on]
    _executable(
        repl_dir / ".lake" / "build" / "bin" / "repl",
        "#!/bin/sh\nexec " + " ".join(shlex.quote(a) for a in args) + "\n",
    )
    lake = _executable(
        folder / "bin" / "lake",
        f"""#!/bin/sh
echo "$PWD $*" >> {shlex.quote(str(lake_log))}
if [ "$1" = "--version" ]; then echo "Lake version 5.0.0-test (Lean version 4.20.0)"; exit 0; fi
if [ "$1" = "-d" ]; then shift 2; fi
if [ "$1" = "env" ]; then shift; exec "$@"; fi
exit 0
""",
    )
    return ReplDouble(lake, repl_dir, log, lake_log)
