"""The process that runs lean-dojo's `Dojo` for the `leandojo` backend.

It is started by tasks/lean/leandojo.py in a folder of its own, with a minimal
environment and a memory limit, so that lean-dojo (and the `lake env lean` it runs
under pexpect) never sees the caller's tokens. It reads one JSON request per line
on stdin and answers one JSON line on stdout:

    {"op": "start", "key": K, "theorem": {url, commit, file_path, full_name}, "timeout": S,
     "additional_imports": [...], "build_deps": B}   -> {"status": "state", "id", "pp"} | error
    {"op": "run_tac", "key": K, "id": N, "tactic": T} -> {"status": "state"|"finished"|"error"|"timeout", ...}
    {"op": "close", "key": K}                         -> {"status": "closed"}

lean-dojo is imported here only (it imports `ray` and sets up logging at import).
"""

from __future__ import annotations

import json
import sys


def _answer(dojos: dict, req: dict) -> dict:
    import lean_dojo as ld

    op = req["op"]
    if op == "start":
        t = req["theorem"]
        theorem = ld.Theorem(ld.LeanGitRepo(t["url"], t["commit"]), t["file_path"], t["full_name"])
        ctx = ld.Dojo(
            theorem,
            timeout=req["timeout"],
            additional_imports=req.get("additional_imports", []),
            build_deps=req.get("build_deps", False),
        )
        try:
            dojo, s0 = ctx.__enter__()
        except ld.DojoInitError as e:
            return {"status": "error", "message": f"Dojo could not start the theorem: {e}"}
        dojos[req["key"]] = (ctx, dojo, {s0.id: s0})
        return {"status": "state", "id": s0.id, "pp": s0.pp}
    if op == "close":
        entry = dojos.pop(req["key"], None)
        if entry is not None:
            entry[0].__exit__(None, None, None)
        return {"status": "closed"}
    ctx, dojo, states = dojos[req["key"]]
    state = states.get(req["id"])
    if state is None:
        return {"status": "error", "message": f"unknown Dojo state {req['id']}"}
    try:
        out = dojo.run_tac(state, req["tactic"])
    except ld.DojoTacticTimeoutError as e:
        return {"status": "timeout", "message": f"the tactic timed out in Lean ({e})"}
    except ld.DojoCrashError as e:
        dojos.pop(req["key"], None)
        return {"status": "crashed", "message": f"Lean crashed under Dojo: {e}"}
    if isinstance(out, ld.TacticState):
        states[out.id] = out
        return {"status": "state", "id": out.id, "pp": out.pp}
    if isinstance(out, ld.ProofFinished):
        return {"status": "finished", "message": out.message or ""}
    if isinstance(out, ld.ProofGivenUp):
        return {"status": "given_up"}
    return {"status": "error", "message": getattr(out, "error", str(out))}


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
