"""A double of `lake env lean FILE` running lean-dojo 4.20.0's `lean_dojo_repl` tactic.

lean-dojo's real `Dojo` writes a copy of the theorem's file whose proof is
`by\\n  lean_dojo_repl\\n  sorry\\n` (lean_dojo/interaction/dojo.py:382) after
`import Lean4Repl` (dojo.py:332) and runs `lake env lean --threads=1 --memory=N FILE`
under pexpect in the traced repository (dojo.py:262-268). This program plays that Lean
process, line for line as `Lean4Repl.lean` (lean-dojo 4.20.0, beside dojo.py) does:

- at start it prints `REPL> {"sid": 0, "tacticState": PP, "error": null}` (Lean4Repl.lean:100-108;
  `printResponse` prints `REPL> ` and the JSON on one line and flushes, :12-15; the derived
  `ToJson` writes the three fields, which dojo.py:285 and :417-422 read as keys);
- then, per stdin line: `exit` ends it (:253); a JSON `{"sid", "cmd"}` runs ONE tactic
  (`runParserCategory ... tactic`, :222): text holding more than one tactic is a parse error
  `<stdin>:L:C: expected end of input` (leanprover-community/repl#43 shows the same for
  the REPL); an error answers `{"sid": null, "tacticState": null, "error": MSG}` (:223, :232);
  a success answers the next sid, numbered by the saved states (:240-244), with
  `"no goals"` when every goal is closed (:93, :237-238); a proof through `sorry` answers
  the error "proof contains `sorry`" (:195-196); an unknown sid is `[fatal] unknown tsid`,
  an exception that ends the elaboration: Lean reports it and exits 1 (:220).

Which tactic leads where comes from the sample's traced transitions (tests/doubles/lean_world.py).
Faults, as tactics (the real Lean shows each of these to pexpect in the same way):
`double_crash` exits 137 mid-proof (the OOM killer's SIGKILL, which dojo.py:482-483 reads as
"OOM"; here the stream ends first, dojo.py:466-467); `double_hang` never answers;
`double_late` closes the goal but answers only when the next request line arrives, i.e.
after the caller's timeout, like a slow `omega` that finishes late: its answer is the
first line a caller that keeps the stream reads next. A file `DOUBLE_SLOW_START` in the
traced repository delays the first state by the seconds it holds (a long file prefix or
`import Mathlib` to elaborate before `lean_dojo_repl` runs).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.doubles.lean_world import CRASH, HANG, NO_GOALS, SORRY, LeanWorld, norm  # noqa: E402

LATE = "double_late"
MARKER = "by\n  lean_dojo_repl\n  sorry\n"  # dojo.py:382


def _print(res: dict) -> None:
    sys.stdout.write("REPL> " + json.dumps(res, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def _log(event: dict) -> None:
    path = os.environ.get("DOJO_DOUBLE_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(
                json.dumps({"pid": os.getpid(), "cwd": os.getcwd(), "env_keys": sorted(os.environ), **event}) + "\n"
            )


def _statement(code: str) -> str:
    """The declaration before the marker: from its `theorem` to `:=` (dojo.py:386-400)."""
    head = code.split(MARKER, 1)[0]
    head = head.rsplit("set_option maxHeartbeats 0 in\n", 1)[-1]
    return head.rstrip().removesuffix(":=").strip()


def _one_tactic(world: LeanWorld, theorem, state: str, cmd: str) -> str | None:
    """The parse error Lean gives when `cmd` is more than one tactic, else None."""
    tac = norm(cmd)
    if tac in world_steps(theorem, state) or tac.split(" ")[0] in (CRASH, HANG, LATE, SORRY):
        return None
    lines = [ln for ln in cmd.strip("\n").split("\n")]
    first_col = len(lines[0]) - len(lines[0].lstrip())
    for i, line in enumerate(lines[1:], start=2):
        col = len(line) - len(line.lstrip())
        if line.strip() and col <= first_col and not line.lstrip().startswith(("|", "<;>")):
            return f"<stdin>:{i}:{col}: expected end of input"
    depth = 0
    for i, ch in enumerate(cmd):
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == ";" and depth == 0 and cmd[max(0, i - 2) : i + 1] != "<;>":
            return f"<stdin>:1:{i}: expected end of input"
    return None


def world_steps(theorem, state: str) -> set[str]:
    return set(theorem.steps.get(norm(state), {}))


def serve(file: Path) -> int:
    code = file.read_text(encoding="utf-8")
    if not code.startswith("import Lean4Repl") or MARKER not in code:
        print(f"{file}:1:0: error: the Dojo double only runs files written by lean-dojo's Dojo")
        return 1
    world = LeanWorld(ROOT / "storage" / "sample")
    theorem = world.theorem(_statement(code))
    if theorem is None or theorem.initial is None:
        # what Lean shows when the file does not elaborate (here: a theorem the sample does not know)
        print(f"{file}:1:0: error: unknown theorem (the double knows no `{_statement(code)[:80]}`)")
        return 1
    slow = Path("DOUBLE_SLOW_START")  # in the traced repository (the cwd): a long prefix to elaborate
    if slow.exists():
        time.sleep(float(slow.read_text() or "2"))
    states = [theorem.initial]  # savedStates (Lean4Repl.lean:48), sid = index
    _print({"sid": 0, "tacticState": theorem.initial, "error": None})
    late: dict | None = None
    for line in sys.stdin:
        line = line.strip()
        if late is not None:  # the slow tactic finishes now, after the caller gave up on it
            _print(late)
            late = None
        if line == "exit":
            return 0
        req = json.loads(line)
        _log({"request": req})
        sid, cmd = req["sid"], req["cmd"]
        if not (0 <= sid < len(states)):
            print(f"{file}:1:0: error: [fatal] unknown tsid: {sid}")
            return 1
        state, tac = states[sid], norm(cmd)
        if tac == CRASH:
            sys.stdout.flush()
            os._exit(137)
        if tac == HANG:
            time.sleep(3600)
            continue
        parse_error = _one_tactic(world, theorem, state, cmd)
        if parse_error is not None:
            _print({"sid": None, "tacticState": None, "error": parse_error})
            continue
        if tac == LATE:
            states.append(NO_GOALS)
            late = {"sid": len(states) - 1, "tacticState": NO_GOALS, "error": None}
            continue
        out = world.step(theorem, state, cmd)
        if out.state is None:
            _print({"sid": None, "tacticState": None, "error": out.error})
        elif "sorryAx" in out.axioms and norm(out.state) == NO_GOALS:
            _print({"sid": None, "tacticState": None, "error": "proof contains `sorry`"})
        else:
            states.append(out.state)
            _print({"sid": len(states) - 1, "tacticState": out.state, "error": None})
    if late is not None:
        _print(late)
    return 0


def main(argv: list[str]) -> int:
    """`lake env lean [--threads=N] [--memory=N] FILE` runs the REPL; other lake calls fail."""
    _log({"argv": argv})
    if argv[:2] != ["env", "lean"]:
        print(f"lake double: only `lake env lean ... FILE` is known, not {argv}", file=sys.stderr)
        return 1
    files = [a for a in argv[2:] if not a.startswith("-")]
    return serve(Path(files[-1]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
