"""Set up the Lean process double so that LeanInteract itself launches it.

LeanInteract starts the REPL as `[lake_path, "env", <local_repl_path>/.lake/build/bin/repl]`
(lean_interact/server.py, `LeanServer.start`). Here `local_repl_path` is a folder holding only
a `lean-toolchain` file and, at that path, a launcher of repl_main.py; `lake_path` is a fake
`lake` that runs `env PROGRAM` (with or without `-d DIR`), answers `--version`, and does
nothing for `build` and `exe cache get` (it logs every call). The launcher names the fault
control file on its command line, so faults reach the process through the sandbox's minimal
environment.
"""

from __future__ import annotations

import json
import shlex
import stat
import sys
from dataclasses import dataclass
from pathlib import Path

from .faults import write_rules

REPL_MAIN = Path(__file__).resolve().parent / "repl_main.py"
CHECKOUT = REPL_MAIN.parents[3]  # this Dojoflow checkout: the double's code and the sample it answers from
LEAN_TOOLCHAIN = "leanprover/lean4:v4.20.0\n"  # the sample's toolchain (storage/sample/lean/*/lean-toolchain)


@dataclass(frozen=True)
class ReplDouble:
    lake_path: Path  # the fake lake
    repl_path: Path  # LeanInteract's local_repl_path
    repl_binary: Path  # the REPL executable itself (what `lake env` runs; kimina's LEAN_SERVER_REPL_PATH)
    log_path: Path  # every request the double received, one JSON line each
    lake_log: Path  # every fake-lake call
    control: Path  # the fault-control file (faults.py)

    def requests(self) -> list[dict]:
        """What reached the double: [{"pid", "cwd", "env_keys", "memory_limit", "request"}], in order."""
        if not self.log_path.exists():
            return []
        return [json.loads(line) for line in self.log_path.read_text().splitlines()]

    def received(self) -> str:
        """All request text the double received, concatenated."""
        return "\n".join(r["request"] for r in self.requests())

    def pids(self) -> list[str]:
        """The distinct Lean processes that received requests, in order of their first request
        (`pid:HOME`: under bubblewrap every process is pid 2 of a PID namespace of its own, with
        a private HOME of its own)."""
        return list(dict.fromkeys(r["pid"] for r in self.requests()))

    def sandbox(self, **extra) -> dict:
        """`backend.sandbox` settings under which the double runs in bubblewrap: Python and this
        checkout read-only, the double's folder (its logs, its fault rules) writable. Real Lean
        needs none of these."""
        return {
            "read_only_paths": [sys.prefix, sys.base_prefix, str(CHECKOUT)],
            "writable_paths": [str(self.log_path.parent)],
            **extra,
        }

    def faults(self, *rules: dict) -> None:
        """Replace the faults (faults.py's rules); `faults()` clears them."""
        write_rules(self.control, list(rules))

    def options(self, **extra) -> dict:
        """`backend.repl` options that point the repl backend at this double."""
        return {"lake_path": str(self.lake_path), "repl_path": str(self.repl_path), "build_repl": False, **extra}


def _executable(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def make_repl_double(folder: Path, *, crash_once_on: str | None = None, tactic_delay_ms: float = 0.0) -> ReplDouble:
    """A double under `folder`; `crash_once_on` and `tactic_delay_ms` are shorthands for the
    first faults (`ReplDouble.faults` sets any)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    log, lake_log, control = folder / "requests.jsonl", folder / "lake-calls.log", folder / "faults.json"
    repl_dir = folder / "repl"
    repl_dir.mkdir(parents=True, exist_ok=True)
    (repl_dir / "lean-toolchain").write_text(LEAN_TOOLCHAIN)
    # -S: no `site` (its .pth files, the editable install's finder): the double imports only the
    # standard library and this checkout (repl_main.py puts it on sys.path), and starts ~30 ms sooner
    args = [sys.executable, "-S", str(REPL_MAIN), "--log", str(log), "--control", str(control)]
    binary = _executable(
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
    double = ReplDouble(lake, repl_dir, binary, log, lake_log, control)
    rules = []
    if crash_once_on:
        rules.append({"when": crash_once_on, "do": "crash", "times": 1})
    if tactic_delay_ms:
        rules.append({"when": '"tactic"', "do": "late", "seconds": tactic_delay_ms / 1000})
    double.faults(*rules)
    return double
