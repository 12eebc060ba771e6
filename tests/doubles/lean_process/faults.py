"""Faults a test injects into the Lean process double, through a JSON control file.

The control file (written by the test, read again before every request, so a test can change
it between two calls) holds `{"rules": [RULE, ...]}`; a RULE is

    {"when": "substring of the raw request" | null (any request),
     "do": "crash" | "hang" | "late" | "garbage" | "grow_memory" | "message" | "flood",
     "seconds": 2.0,      # "late": answer this long after the request
     "rss_mb": 300,       # "grow_memory": hold memory until RSS reaches this, then answer
     "text": "...",       # "message": answer `{"message": text}` instead
     "mb": 3.0,           # "flood": add this many MiB of info messages to the answer
     "times": 1}          # how many requests it hits, over every process of this double; null: all

What each one stands for (docs/lean-backends.md, "Testing with the Lean process double"):
- crash: the process exits without answering (a Lean panic, or the kernel's OOM killer);
- hang: it never answers (a tactic that loops), so the client's timeout kills it;
- late: it answers, after `seconds` (lean-dojo's stale stream, conformance #1);
- garbage: it answers something that is not JSON;
- message: it answers `{"message": text}`, the REPL's answer to a request it could not run
  (the shape of upstream/unknown_environment and unknown_tactic), e.g. an import that fails;
- grow_memory: its resident memory grows past what LeanInteract's `AutoLeanServer` tolerates,
  so that `_run_dict_backoff` kills and restarts it before the next request (conformance #2:
  RSS >= max_process_memory (0.8) x memory_hard_limit_mb).
- flood: its answer carries `mb` MiB of info messages, as Lean's answer to a short proof that
  logs in a loop (`iterate 100000 (trace "...")`: each `trace` adds one message to the log,
  src/Lean/Util/Trace.lean / src/Lean/Log.lean `logInfo`; the REPL returns every message of the
  command in `messages`, repl-upstream/test/*.expected.out), issue 27 §4.

`times` is counted with one marker file per hit next to the control file, created with
O_EXCL, so it holds across the restarts the faults cause.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

ACTIONS = ("crash", "hang", "late", "garbage", "grow_memory", "message", "flood")
GARBAGE = "this is not JSON: the Lean process double was told to answer garbage\n\n"


@dataclass(frozen=True)
class Fault:
    do: str
    seconds: float = 0.0
    rss_mb: float = 0.0
    text: str = ""
    mb: float = 0.0


def write_rules(control: Path, rules: list[dict]) -> None:
    """Replace the control file's rules (atomically: a process may be reading it)."""
    for rule in rules:
        if rule.get("do") not in ACTIONS:
            raise ValueError(f"fault rule {rule}: `do` must be one of {ACTIONS}")
    tmp = control.with_name(control.name + ".tmp")
    tmp.write_text(json.dumps({"rules": rules}))
    os.replace(tmp, control)
    for marker in control.parent.glob(control.name + ".hit-*"):
        marker.unlink()


def fault_for(control: Path | None, raw_request: str) -> Fault | None:
    """The first rule that matches `raw_request` and has hits left (taking one of them)."""
    if control is None or not control.exists():
        return None
    rules = json.loads(control.read_text() or "{}").get("rules", [])
    for i, rule in enumerate(rules):
        if rule.get("when") is not None and rule["when"] not in raw_request:
            continue
        times = rule.get("times")
        if times is not None and not _take_hit(control, i, times):
            continue
        return Fault(
            rule["do"],
            float(rule.get("seconds", 0.0)),
            float(rule.get("rss_mb", 0.0)),
            str(rule.get("text", "")),
            float(rule.get("mb", 0.0)),
        )
    return None


def _take_hit(control: Path, index: int, times: int) -> bool:
    for k in range(times):
        try:
            fd = os.open(control.with_name(f"{control.name}.hit-{index}-{k}"), os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            continue
        os.write(fd, str(os.getpid()).encode())
        os.close(fd)
        return True
    return False


_HELD: list[bytes] = []


def grow_memory(rss_mb: float) -> None:
    """Hold touched memory until this process's RSS reaches `rss_mb` (bytes objects are filled
    pages, so they count in RSS at once, which is what psutil reads)."""
    while _rss_mb() < rss_mb:
        _HELD.append(b"\x01" * (16 * 1024 * 1024))


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def flooded(reply: dict, mb: float) -> dict:
    """`reply` with `mb` MiB of info messages added (the "flood" fault)."""
    line = {"severity": "info", "pos": {"line": 1, "column": 0}, "endPos": None, "data": "trace: " + "x" * 1000}
    return {**reply, "messages": list(reply.get("messages", [])) + [line] * (int(mb * 1024 * 1024 / 1100) + 1)}


def sleep_forever() -> None:
    while True:
        time.sleep(3600)
