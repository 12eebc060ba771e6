"""A double of `lake env lean FILE` running lean-dojo 4.20.0's `lean_dojo_repl` tactic.

lean-dojo's real `Dojo` writes a copy of the theorem's file whose proof is
`by\\n  lean_dojo_repl\\n  sorry\\n` (lean_dojo/interaction/dojo.py:382) after
`import Lean4Repl` (dojo.py:332) and runs `lake env lean --threads=1 --memory=N FILE`
under pexpect in the traced repository (dojo.py:262-268). This program plays that Lean
process, line for line as `Lean4Repl.lean` (lean-dojo 4.20.0, beside dojo.py) does:

- at start it prints `REPL> {"sid": 0, "tacticState": PP, "error": null}` (Lean4Repl.lean:100-108;
  `printResponse` prints `REPL> ` and the JSON on one line and flushes, :12-15; the derived
  `ToJson` writes all three fields, `none` as null: Lean's deriving handler omits a `none` only
  for a field whose name ends in `?` (src/Lean/Elab/Deriving/FromToJson.lean, `mkJsonField`),
  and dojo.py:285 and :417-422 index the keys);
- then, per stdin line: `exit` ends it (:253); a JSON `{"sid", "cmd"}` runs ONE tactic
  (`runParserCategory ... tactic`, :222): text holding more than one tactic is a parse error
  `<stdin>:L:C: expected end of input` (leanprover-community/repl#43 shows the same for
  the REPL); an error answers `{"sid": null, "tacticState": null, "error": MSG}` (:223, :232);
  a success answers the next sid, numbered by the saved states (:240-244), with
  `"no goals"` when every goal is closed (:93, :237-238); a proof through `sorry` answers
  the error "proof contains `sorry`" (:195-196); an unknown sid is `[fatal] unknown tsid`,
  an exception that ends the elaboration: Lean reports it and exits 1 (:220).

What Lean answers is the shared double of the Lean process (tests/doubles/lean_process/):
the theorem is opened in its `LeanCore` as `THEOREM := by sorry` (the REPL's sorry gives the
initial goal, as `lean_dojo_repl` prints it), and each tactic is the core's
`{"tactic", "proofState"}` answer, read the way `Lean4Repl` reports the same outcome:
error messages are joined (:230-232); "Completed" is `no goals` (:237-238, :212-215); no
goals left but the proof holds `sorry` is "proof contains `sorry`" (:195-196), a
metavariable "proof contains metavariables" (:198-199), a kernel failure "kernel type
check failed: ..." (:207-210); open goals are the state, joined by blank lines (:91-96).

Faults: the in-band tactics `double_crash` (exit 137 mid-proof: the OOM killer's SIGKILL,
which dojo.py:482-483 reads as "OOM"; the stream ends first, dojo.py:466-467) and
`double_hang` (never answers), the control-file rules of lean_process/faults.py (crash,
hang, late after `seconds`, garbage: a `REPL>` line that is not JSON, dojo.py:470-471), and
`double_late`: it closes the goal but answers only when the next request line arrives,
i.e. after the caller's timeout, like a slow `omega` that finishes late: its answer is the
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

from tests.doubles.lean_process.core import METAVARIABLES, LeanCore, ProcessFault  # noqa: E402
from tests.doubles.lean_process.faults import fault_for, sleep_forever  # noqa: E402
from tests.doubles.lean_process.world import CRASH, HANG, NO_GOALS, LeanWorld, norm  # noqa: E402

LATE = "double_late"
MARKER = "by\n  lean_dojo_repl\n  sorry\n"  # dojo.py:382


def _print(res: dict) -> None:
    sys.stdout.write("REPL> " + json.dumps(res, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def _error(message: str) -> dict:
    return {"sid": None, "tacticState": None, "error": message}


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


def parse_error(cmd: str) -> str | None:
    """The error `runParserCategory env `tactic cmd "<stdin>"` gives when `cmd` holds more than one
    tactic (Lean4Repl.lean:222), else None: a second tactic on a new line at the first one's column
    (not a `|` alternative or a `<;>` continuation), or after a `;` outside brackets."""
    lines = cmd.strip("\n").split("\n")
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


def as_lean4repl(reply: dict) -> tuple[str | None, str | None]:
    """(tactic state, error) of Lean4Repl for the core's REPL answer to one tactic."""
    if set(reply) == {"message"}:  # a tactic that does not parse; Lean4Repl names the input <stdin>
        return None, reply["message"].removeprefix("Lean error:\n").replace("<input>", "<stdin>")
    errors = [m["data"] for m in reply.get("messages", []) if m["severity"] == "error"]
    if errors:
        return None, "\n".join(errors)
    status, goals = reply["proofStatus"], reply.get("goals", [])
    if goals:
        return "\n\n".join(goals), None
    if status == "Completed":
        return NO_GOALS, None
    if status == "Incomplete: contains sorry":
        return None, "proof contains `sorry`"
    if status == METAVARIABLES:
        return None, "proof contains metavariables"
    if status.startswith("Error: kernel type check failed"):
        return None, status.removeprefix("Error: ")
    return None, status


def _control() -> Path | None:
    path = os.environ.get("DOJO_DOUBLE_CONTROL")
    return Path(path) if path else None


def serve(file: Path) -> int:
    code = file.read_text(encoding="utf-8")
    if not code.startswith("import Lean4Repl") or MARKER not in code:
        print(f"{file}:1:0: error: the Dojo double only runs files written by lean-dojo's Dojo")
        return 1
    core = LeanCore(LeanWorld(ROOT / "storage" / "sample"))
    opened = core.answer({"cmd": _statement(code) + " := by\n  sorry"})
    if not opened.get("sorries"):
        # what Lean shows when the file does not elaborate (here: a theorem the sample does not know)
        print(f"{file}:1:0: error: unknown theorem (the double knows no `{_statement(code)[:80]}`)")
        return 1
    slow = Path("DOUBLE_SLOW_START")  # in the traced repository (the cwd)
    if slow.exists():
        time.sleep(float(slow.read_text() or "2"))
    sids = [opened["sorries"][0]["proofState"]]  # savedStates (Lean4Repl.lean:48): sid -> core proofState
    _print({"sid": 0, "tacticState": opened["sorries"][0]["goal"], "error": None})
    late: dict | None = None
    for raw in sys.stdin:
        line = raw.strip()
        if late is not None:  # the slow tactic finishes now, after the caller gave up on it
            _print(late)
            late = None
        if line == "exit":
            return 0
        req = json.loads(line)
        _log({"request": req})
        sid, cmd = req["sid"], req["cmd"]
        if not (0 <= sid < len(sids)):
            print(f"{file}:1:0: error: [fatal] unknown tsid: {sid}")
            return 1
        fault = fault_for(_control(), line)
        if fault is not None and fault.do == "crash" or norm(cmd) == CRASH:
            sys.stdout.flush()
            os._exit(137)
        if fault is not None and fault.do == "hang" or norm(cmd) == HANG:
            sleep_forever()
        if fault is not None and fault.do == "garbage":
            sys.stdout.write("REPL> this is not JSON: the Lean process double was told to answer garbage\n")
            sys.stdout.flush()
            continue
        error = parse_error(cmd)
        if error is None and norm(cmd) == LATE:
            sids.append(-1)
            late = {"sid": len(sids) - 1, "tacticState": NO_GOALS, "error": None}
            continue
        if error is None:
            if sids[sid] < 0:
                error = "no goals to be proved"
            else:
                try:
                    reply = core.answer({"tactic": cmd, "proofState": sids[sid]})
                except ProcessFault as e:  # an in-band crash or hang inside a longer text
                    if e.kind == CRASH:
                        os._exit(137)
                    sleep_forever()
                state, error = as_lean4repl(reply)
        if fault is not None and fault.do == "late":
            time.sleep(fault.seconds)
        if error is not None:
            _print(_error(error))
        else:
            sids.append(reply["proofState"])
            _print({"sid": len(sids) - 1, "tacticState": state, "error": None})
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
