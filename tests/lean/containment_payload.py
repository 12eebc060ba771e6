"""A stand-in for a Lean process running a hostile proof, launched exactly as the REPL is
(LeanInteract runs `lake env <repl>` through Dojoflow's launcher). It reads the first request
(the REPL reads blank-line separated JSON on stdin, leanprover-community/repl REPL/Main.lean)
and then, by `--mode`:

  fork   a fork bomb, bounded: start up to `--most` processes that sleep with `--token` in
         their command line, until the kernel refuses one; write how many started to
         `containment-report.json` in its HOME (its private folder), then die without answering
  memory start `--most` processes that each touch `--mb` MiB and hold it until every one of them
         holds its memory or is gone (killed: the payload notes each one that does not exit cleanly;
         3 s at most), then write a line to `containment-memory.txt` in HOME (each alone fits
         RLIMIT_AS; together they pass the tree's memory cap), wait for them, then die without
         answering
  flood  answer with one JSON object of `--mb` MiB (a message list, as the REPL answers a proof
         that prints much: `iterate n (trace ...)` logs one message per iteration,
         src/Lean/Util/Trace.lean), ended by a blank line as the REPL ends every answer
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time


def _first_request() -> None:
    text = ""
    while not text.endswith("\n\n"):
        line = sys.stdin.readline()
        if not line:
            return
        text += line


def fork(token: str, most: int) -> None:
    started, error = [], None
    for _ in range(most):
        try:
            started.append(subprocess.Popen(["sleep", "600", token]))
        except OSError as e:
            error = f"{type(e).__name__}: {e}"
            break
    report = {"started": len(started), "error": error}
    with open(os.path.join(os.environ["HOME"], "containment-report.json"), "w") as f:
        json.dump(report, f)
    time.sleep(0.2)
    os._exit(3)


def flood(mb: float) -> None:
    line = {"severity": "info", "pos": {"line": 1, "column": 0}, "data": "x" * 1000}
    count = int(mb * 1024 * 1024 / 1100) + 1
    body = json.dumps({"messages": [line] * count, "env": 1})
    sys.stdout.write(body + "\n\n")
    sys.stdout.flush()
    time.sleep(600)


HOLD = """
import os, sys, time
b = bytearray(int(float(sys.argv[1]) * 1048576))
b[::4096] = b"x" * len(b[::4096])
barrier, most = sys.argv[2], int(sys.argv[3])
with open(barrier, "a") as f:
    f.write("held\\n")
end = time.monotonic() + 3  # a bound, not the wait: all of them hold their memory at once, then go on
while time.monotonic() < end:
    with open(barrier) as f:
        if len(f.read().split()) >= most:
            break
    time.sleep(0.01)
with open(os.path.join(os.environ["HOME"], "containment-memory.txt"), "a") as f:
    f.write("ok\\n")  # it lived through holding its memory while every other one held or was gone
"""


def memory(most: int, mb: float) -> None:
    barrier = os.path.join(os.environ["HOME"], "containment-held.txt")
    children = [subprocess.Popen([sys.executable, "-c", HOLD, str(mb), barrier, str(most)]) for _ in range(most)]
    for _ in children:
        _, status = os.wait()
        if status != 0:  # killed (the memory cap), or failed: the others need not wait for it
            with open(barrier, "a") as f:
                f.write("gone\n")
    os._exit(3)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", choices=("fork", "flood", "memory"), required=True)
    ap.add_argument("--token", default="")
    ap.add_argument("--most", type=int, default=100)
    ap.add_argument("--mb", type=float, default=3.0)
    args = ap.parse_args()
    _first_request()
    if args.mode == "fork":
        fork(args.token, args.most)
    elif args.mode == "memory":
        memory(args.most, args.mb)
    else:
        flood(args.mb)


if __name__ == "__main__":
    main()
