"""The process that runs lean-dojo's `Dojo` for the `leandojo` backend.

It is started by tasks/lean/leandojo.py in a folder of its own, with a minimal
environment and a memory limit, so that lean-dojo (and the `lake env lean` it runs
under pexpect) never sees the caller's tokens. It reads one JSON request per line
on stdin and answers one JSON line on stdout:

    {"op": "start", "key": K, "theorem": {url, commit, file_path, full_name}, "cache_dir": D,
     "start_timeout": S, "tactic_timeout": S, "additional_imports": [...], "build_deps": B}
        -> {"status": "state", "id", "pp"} | {"status": "error", "message"}
    {"op": "run_tac", "key": K, "id": N, "tactic": T}
        -> {"status": "state"|"finished"|"error"|"given_up"|"timeout"|"crashed", ..., "discarded": B}
    {"op": "close", "key": K}                         -> {"status": "closed"}

A Dojo whose tactic timed out or crashed is closed and forgotten ("discarded": true): after
`DojoTacticTimeoutError`, lean-dojo's `_read_next_line` would keep reading the same pexpect
stream, so the late answer of the timed-out tactic would be taken as the answer to the next
one (lean_dojo/interaction/dojo.py:487-517). The caller opens the theorem again.

lean-dojo is imported here only (it imports `ray` and sets up logging at import).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def _open(dojos: dict, req: dict) -> dict:
    import lean_dojo as ld
    from lean_dojo.data_extraction import lean as ld_lean

    from tasks.lean.dojo_repo import bare_repo, find_traced_repo

    t = req["theorem"]
    found = find_traced_repo(Path(req["cache_dir"]), t["url"], t["commit"])
    version = ld_lean.get_lean4_version_from_config(found.lean_toolchain) if found.lean_toolchain else "unknown"
    repo = bare_repo(ld_lean, found.local_url, t["commit"], version, ld_lean.RepoType.LOCAL)
    theorem = ld.Theorem(repo, t["file_path"], t["full_name"])
    # Dojo has one pexpect timeout for its start and for every tactic (dojo.py:266-268, :502):
    # start with the start limit, then set the tactic limit on the spawned process.
    ctx = ld.Dojo(
        theorem,
        timeout=req["start_timeout"],
        additional_imports=req.get("additional_imports", []),
        build_deps=req.get("build_deps", False),
    )
    try:
        dojo, s0 = ctx.__enter__()
    except ld.DojoInitError as e:
        return {"status": "error", "message": f"Dojo could not start the theorem: {e or type(e).__name__}"}
    tune_for_tactics(dojo.proc, req["tactic_timeout"])
    _discard(dojos, req["key"])
    dojos[req["key"]] = (ctx, dojo, {s0.id: s0})
    return {"status": "state", "id": s0.id, "pp": s0.pp}


def tune_for_tactics(proc, tactic_timeout: float) -> None:
    """Set the Dojo's pexpect process for tactics: the tactic limit as its timeout, and no sleep
    before each request. pexpect sleeps `delaybeforesend` (0.05 s, pexpect/spawnbase.py) before
    every `send` (pty_spawn.py `send`), for programs that drop what arrives before they turn echo
    off for a password prompt; the Dojo spawns Lean with echo off (dojo.py:266-268) and Lean4Repl
    reads each request as one line of the pty (`getLine`, Lean4Repl.lean:252), so a request sent at once is read the same, and
    each tactic is 50 ms sooner."""
    proc.timeout = tactic_timeout
    proc.delaybeforesend = None


def _discard(dojos: dict, key: str) -> None:
    entry = dojos.pop(key, None)
    if entry is not None:
        try:
            entry[0].__exit__(None, None, None)  # kills the Lean process (dojo.py:313)
        except Exception:  # noqa: BLE001  (already dead)
            pass


def _run_tac(dojos: dict, req: dict) -> dict:
    import lean_dojo as ld

    entry = dojos.get(req["key"])
    if entry is None:
        return {"status": "error", "message": "this theorem's Dojo was closed: open it again", "discarded": True}
    _, dojo, states = entry
    state = states.get(req["id"])
    if state is None:
        return {"status": "error", "message": f"unknown Dojo state {req['id']}"}
    try:
        out = dojo.run_tac(state, req["tactic"])
    except ld.DojoTacticTimeoutError:
        _discard(dojos, req["key"])
        return {"status": "timeout", "message": "the tactic timed out in Lean (its Dojo was closed)", "discarded": True}
    except ld.DojoCrashError as e:
        _discard(dojos, req["key"])
        return {"status": "crashed", "message": f"Lean crashed under Dojo ({e})", "discarded": True}
    except Exception as e:  # noqa: BLE001  (the stream may be out of step: never read it again)
        _discard(dojos, req["key"])
        return {"status": "crashed", "message": f"Dojo failed: {type(e).__name__}: {e}", "discarded": True}
    if isinstance(out, ld.TacticState):
        states[out.id] = out
        return {"status": "state", "id": out.id, "pp": out.pp}
    if isinstance(out, ld.ProofFinished):
        return {"status": "finished", "message": out.message or ""}
    if isinstance(out, ld.ProofGivenUp):
        return {"status": "given_up"}
    return {"status": "error", "message": getattr(out, "error", str(out))}


def _answer(dojos: dict, req: dict) -> dict:
    op = req["op"]
    if op == "start":
        return _open(dojos, req)
    if op == "close":
        _discard(dojos, req["key"])
        return {"status": "closed"}
    return _run_tac(dojos, req)


def main() -> None:
    import os

    # The protocol owns the real stdout; whatever lean-dojo prints goes to stderr (the log).
    protocol = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    dojos: dict = {}
    for line in sys.stdin:
        if not line.strip():
            continue
        req = json.loads(line)
        try:
            reply = _answer(dojos, req)
        except Exception as e:  # noqa: BLE001 (reported to the parent, which decides)
            reply = {"status": "error", "message": f"{type(e).__name__}: {e}"}
        protocol.write(json.dumps(reply, ensure_ascii=False) + "\n")
        protocol.flush()


if __name__ == "__main__":
    main()
