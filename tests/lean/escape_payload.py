"""A stand-in for a Lean process running a hostile proof. Lean runs code while it
elaborates (tactics are programs; `native_decide` compiles and runs code), so a proof
can do whatever a program can; this runner does it in Python, launched exactly as the
REPL is (LeanInteract runs `lake env <repl>/.lake/build/bin/repl` through Dojoflow's
launcher). On the first request it tries four escapes, writes what happened to
`escape-report.json` in its HOME (its private folder, which the test can read), and
dies without answering, as a REPL that a payload crashed:

  write     create files outside its folder (`--write`, repeatable)
  connect   open a TCP connection to 127.0.0.1:`--port` and send a line
  secret    read `--secret` (a file in the user's home)
  linger    start a process in a new session (double fork) that outlives the REPL;
            it sleeps with `--token` in its command line so the test can find it
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys


def _attempt(fn) -> str:
    try:
        return "ok: " + str(fn())
    except Exception as e:  # noqa: BLE001 (every failure is the result being reported)
        return f"failed: {type(e).__name__}: {e}"


def _write(path: str) -> str:
    with open(path, "w") as f:
        f.write("escaped\n")
    return path


def _connect(port: int) -> str:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(b"escaped\n")
    return f"127.0.0.1:{port}"


def _read(path: str) -> str:
    with open(path) as f:
        return f.read().strip()


def _linger(token: str) -> str:
    code = "import os,sys,time\nif os.fork(): os._exit(0)\nos.setsid()\ntime.sleep(3600)"
    # Its stdio is not the REPL's pipes: LeanInteract would otherwise wait on them (the test
    # would then hang until the theorem's timeout, unsandboxed).
    child = subprocess.Popen(
        [sys.executable, "-c", code, token],
        start_new_session=True,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return f"started {child.wait()}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--write", action="append", default=[])
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--secret", required=True)
    ap.add_argument("--token", required=True)
    args = ap.parse_args()
    sys.stdin.readline()  # the first request: the payload runs while Lean elaborates it
    report = {
        "write": [_attempt(lambda p=p: _write(p)) for p in args.write],
        "connect": _attempt(lambda: _connect(args.port)),
        "secret": _attempt(lambda: _read(args.secret)),
        "linger": _attempt(lambda: _linger(args.token)),
        "env": sorted(os.environ),
        "uid": os.getuid(),
    }
    with open(os.path.join(os.environ["HOME"], "escape-report.json"), "w") as f:
        json.dump(report, f)
    os._exit(134)  # the REPL dies without an answer


if __name__ == "__main__":
    main()
