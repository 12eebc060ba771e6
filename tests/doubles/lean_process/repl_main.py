#!/usr/bin/env python3
"""The Lean process double as a REPL executable: leanprover-community/repl's wire protocol
(JSON requests separated by blank lines on stdin; each answer one JSON object and a blank
line on stdout, REPL/Main.lean), answered by `LeanCore`, with the faults of the control file.

    python tests/doubles/lean_process/repl_main.py --log /tmp/requests.jsonl [--control faults.json]

Every request is appended as received to the `--log` file (with the process's pid, working
folder, environment variable names and RLIMIT_AS), so tests can assert what reached "Lean".
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
if not __package__:  # run as a script, in the sandbox's minimal environment: find the checkout's packages
    sys.path.insert(0, str(ROOT))

from tests.doubles.lean_process.core import LeanCore, ProcessFault  # noqa: E402
from tests.doubles.lean_process.faults import GARBAGE, fault_for, flooded, grow_memory, sleep_forever  # noqa: E402
from tests.doubles.lean_process.world import CRASH, LeanWorld  # noqa: E402

CRASH_EXIT = 134  # what a Lean process that aborts (a panic, an uncaught exception) exits with


def read_requests(stream):
    """Requests as the REPL reads them: JSON objects separated by blank lines."""
    buf = []
    for line in stream:
        if line.strip():
            buf.append(line)
            continue
        if buf:
            yield "".join(buf)
            buf = []
    if buf:
        yield "".join(buf)


def _log(log: Path, raw: str) -> None:
    with log.open("a", encoding="utf-8") as f:
        f.write(
            json.dumps(
                {
                    # pid 2 for every process in its own PID namespace (bubblewrap): with its
                    # private HOME, one name per process
                    "pid": f"{os.getpid()}:{os.environ.get('HOME', '')}",
                    "cwd": os.getcwd(),
                    "env_keys": sorted(os.environ),
                    "memory_limit": resource.getrlimit(resource.RLIMIT_AS)[0],
                    "request": raw,
                }
            )
            + "\n"
        )


def serve(core: LeanCore, stdin, stdout, log: Path, control: Path | None) -> None:
    for raw in read_requests(stdin):
        _log(log, raw)
        fault = fault_for(control, raw)
        if fault is not None and fault.do == "crash":
            os._exit(CRASH_EXIT)
        if fault is not None and fault.do == "hang":
            sleep_forever()
        try:
            answer = {"message": fault.text} if fault is not None and fault.do == "message" else None
            answer = answer or core.answer(json.loads(raw))
            if fault is not None and fault.do == "flood":
                answer = flooded(answer, fault.mb)
            # a flood is written across lines, as the REPL prints every answer (`(toJson r).pretty`,
            # REPL/Main.lean), so readers that take a line at a time see lines of ordinary length
            indent = 1 if fault is not None and fault.do == "flood" else None
            reply = json.dumps(answer, ensure_ascii=False, indent=indent) + "\n\n"
        except json.JSONDecodeError as e:
            # REPL/Main.lean answers a request it cannot parse with a message, and goes on.
            reply = json.dumps({"message": f"Could not parse JSON:\n{e}"}) + "\n\n"
        except ProcessFault as f:
            if f.kind == CRASH:
                os._exit(CRASH_EXIT)
            sleep_forever()
        if fault is not None and fault.do == "late":
            time.sleep(fault.seconds)
        if fault is not None and fault.do == "grow_memory":  # before answering: the next request sees it
            grow_memory(fault.rss_mb)
        stdout.write(GARBAGE if fault is not None and fault.do == "garbage" else reply)
        stdout.flush()


def main(argv=None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--log", required=True, help="append every request received here")
    ap.add_argument("--control", default=None, help="the JSON fault-control file (faults.py)")
    args = ap.parse_args(argv)
    core = LeanCore(LeanWorld(ROOT / "storage" / "sample"))
    serve(core, sys.stdin, sys.stdout, Path(args.log), Path(args.control) if args.control else None)


if __name__ == "__main__":
    main()
