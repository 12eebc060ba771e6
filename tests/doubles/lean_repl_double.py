#!/usr/bin/env python3
"""A test double of the Lean REPL (leanprover-community/repl): same wire protocol,
answers from the sample's real transitions (tests/doubles/lean_world.py).

It reads JSON requests separated by blank lines on stdin and answers each with one
JSON object followed by a blank line, as the REPL does:

- `{"cmd": TEXT, "env"?: N}`: the last `theorem` of TEXT, if the double knows its
  statement, is elaborated: `by sorry` gives a sorry with a `proofState` and the
  theorem's goal and the warning ``declaration uses `sorry` ``; a tactic proof is
  checked against the known transitions (errors as `messages` of severity error).
  `#print axioms NAME` answers the REPL's info message. Anything else (a file
  header) just gives a new `env`.
- `{"tactic": T, "proofState": N}`: `{"proofState", "goals", "proofStatus"}`, or
  `{"message": "Lean error:\\n..."}`; an unknown proof state gives
  `{"message": "Unknown proof state."}`.

Every request is appended, as received, to the `--log` file, so tests can assert what
reached "Lean". `--crash-once-on TEXT` exits without answering the first request that
contains TEXT (once per log: a marker file records it); the tactics `double_crash` and
`double_hang` always crash or hang; `--tactic-delay-ms` sleeps before each tactic answer.

    python tests/doubles/lean_repl_double.py --log /tmp/requests.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if not __package__:  # run as a script, in a minimal environment: find the checkout's packages
    sys.path.insert(0, str(ROOT))

from tests.doubles.lean_world import CRASH, HANG, NO_GOALS, LeanWorld, split_declaration  # noqa: E402


def _names(t, axioms) -> dict:
    """A declaration is found by its full name and by the short name its statement gives."""
    return {t.full_name: axioms, t.statement.split()[1]: axioms}


def _pos(line: int, col: int = 0) -> dict:
    return {"line": line, "column": col}


class ReplDouble:
    def __init__(self, world, tactic_delay_s: float = 0.0):
        self.world = world
        self.delay = tactic_delay_s
        self.envs: list[dict] = []  # env id -> {name: axioms} of declarations it added, with its parent
        self.states: list[tuple] = []  # proofState id -> (theorem, state text, axioms so far)

    def _new_env(self, parent: int | None, decls: dict) -> int:
        self.envs.append({"parent": parent, "decls": decls})
        return len(self.envs) - 1

    def _lookup(self, env: int | None, name: str):
        while env is not None:
            if name in self.envs[env]["decls"]:
                return self.envs[env]["decls"][name]
            env = self.envs[env]["parent"]
        return None

    def command(self, req: dict) -> dict | None:
        env, cmd = req.get("env"), req["cmd"]
        if env is not None and not (0 <= env < len(self.envs)):
            return {"message": "Unknown environment."}
        line0 = cmd.count("\n", 0, len(cmd.rstrip())) + 1
        if cmd.strip().startswith("#print axioms"):
            name = cmd.strip().split(None, 2)[2]
            axioms = self._lookup(env, name)
            if axioms is None:
                return {
                    "env": self._new_env(env, {}),
                    "messages": [
                        {
                            "severity": "error",
                            "pos": _pos(1, 15),
                            "endPos": _pos(1, 15 + len(name)),
                            "data": f"unknown constant '{name}'",
                        }
                    ],
                }
            text = (
                f"'{name}' depends on axioms: [{', '.join(sorted(axioms))}]"
                if axioms
                else f"'{name}' does not depend on any axioms"
            )
            return {
                "env": self._new_env(env, {}),
                "messages": [{"severity": "info", "pos": _pos(1), "endPos": _pos(1, 13), "data": text}],
            }
        parts = split_declaration(cmd)
        t = self.world.theorem(parts[1]) if parts else None
        if t is None:
            return {"env": self._new_env(env, {})}  # a header, or a declaration the double does not model
        decl_line = parts[0].count("\n") + (2 if parts[0] else 1)
        proof = parts[2].strip()
        if proof == "sorry":
            if t.initial is None:
                return {
                    "env": self._new_env(env, _names(t, {"sorryAx"})),
                    "messages": [
                        {
                            "severity": "error",
                            "pos": _pos(decl_line),
                            "endPos": _pos(decl_line, 1),
                            "data": f"the double knows no goals for {t.full_name}",
                        }
                    ],
                }
            self.states.append((t, t.initial, set()))
            col = len(cmd.rstrip().split("\n")[-1]) - len("sorry")
            return {
                "env": self._new_env(env, _names(t, {"sorryAx"})),
                "sorries": [
                    {
                        "proofState": len(self.states) - 1,
                        "goal": t.initial,
                        "pos": _pos(line0, col),
                        "endPos": _pos(line0, col + 5),
                    }
                ],
                "messages": [
                    {
                        "severity": "warning",
                        "pos": _pos(decl_line),
                        "endPos": _pos(decl_line, 7),
                        "data": "declaration uses `sorry`",
                    }
                ],
            }
        out = self.world.run_proof(t, proof)
        self._special(out.special)
        if out.state != NO_GOALS:
            return {
                "env": self._new_env(env, _names(t, {"sorryAx"})),
                "messages": [{"severity": "error", "pos": _pos(decl_line), "endPos": _pos(line0), "data": out.error}],
            }
        reply = {"env": self._new_env(env, _names(t, out.axioms))}
        if "sorryAx" in out.axioms:
            reply["messages"] = [
                {
                    "severity": "warning",
                    "pos": _pos(decl_line),
                    "endPos": _pos(decl_line, 7),
                    "data": "declaration uses `sorry`",
                }
            ]
        return reply

    def tactic(self, req: dict) -> dict | None:
        if self.delay:
            time.sleep(self.delay)
        sid = req.get("proofState")
        if not isinstance(sid, int) or not (0 <= sid < len(self.states)):
            return {"message": "Unknown proof state."}
        t, state, axioms = self.states[sid]
        out = self.world.step(t, state, req["tactic"])
        self._special(out.special)
        if out.state is None:
            return {"message": f"Lean error:\n{out.error}"}
        axioms = axioms | out.axioms
        self.states.append((t, out.state, axioms))
        goals = [] if out.state == NO_GOALS else out.state.split("\n\n")
        status = (
            "Incomplete: contains sorry"
            if "sorryAx" in axioms
            else "Completed"
            if not goals
            else "Incomplete: open goals remain"
        )
        return {"proofState": len(self.states) - 1, "goals": goals, "proofStatus": status}

    @staticmethod
    def _special(special: str | None) -> None:
        if special == CRASH:
            os._exit(134)
        if special == HANG:
            while True:
                time.sleep(3600)

    def answer(self, req: dict) -> dict:
        if "cmd" in req:
            return self.command(req)
        if "tactic" in req:
            return self.tactic(req)
        return {"message": f"the double does not implement this request: {sorted(req)}"}


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


def main(argv=None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--log", required=True, help="append every request received here")
    ap.add_argument("--crash-once-on", default=None)
    ap.add_argument("--tactic-delay-ms", type=float, default=0.0)
    args = ap.parse_args(argv)
    world = LeanWorld(ROOT / "storage" / "sample")
    double = ReplDouble(world, args.tactic_delay_ms / 1000)
    log = Path(args.log)
    marker = log.with_name(log.name + ".crashed")
    for raw in read_requests(sys.stdin):
        with log.open("a", encoding="utf-8") as f:
            f.write(
                json.dumps(
                    {
                        "pid": os.getpid(),  # 2 for every process in its own PID namespace (bubblewrap)
                        "home": os.environ.get("HOME", ""),  # the private folder: one per process
                        "cwd": os.getcwd(),
                        "env_keys": sorted(os.environ),
                        "memory_limit": resource.getrlimit(resource.RLIMIT_AS)[0],
                        "request": raw,
                    }
                )
                + "\n"
            )
        if args.crash_once_on and args.crash_once_on in raw and not marker.exists():
            marker.write_text(str(os.getpid()))
            os._exit(134)
        try:
            reply = double.answer(json.loads(raw))
        except json.JSONDecodeError as e:
            reply = {"message": f"Could not parse JSON:\n{e}"}
        sys.stdout.write(json.dumps(reply, ensure_ascii=False) + "\n\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
