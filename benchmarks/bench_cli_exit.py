"""How long a `dojoflow` process takes to end after its command is done, with the libraries a
`dojoflow run` holds loaded (flows/cli/quick_exit.py, docs/terminal-and-server.md).

Measured in one run, median of N each (N = --repeats, default 5), interleaved, each in a fresh
process that imports torch, transformers, TRL, PEFT, Prefect and `flows.curriculum`, runs one
backward pass, prints a timestamp and exits:
  teardown    `sys.exit(0)`: the interpreter's exit, module teardown and its collections included
              (what every `dojoflow` process paid before);
  quick       `flows.cli.quick_exit.exit_now(0)`: threads joined, exit handlers run, output
              flushed, `os._exit` (what `dojoflow` does now);
seconds from the printed timestamp to the process's end, wall and the process's CPU (user+sys of
the child, from exec: the exit's share is the difference between the two ways).

    .venv/bin/python benchmarks/bench_cli_exit.py [--repeats 5] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.machine import describe_machine  # noqa: E402

PROBE = """
import sys, time
import torch, transformers, trl, peft, prefect, flows.curriculum
from trl import SFTTrainer
m = torch.nn.Linear(10, 10)
m(torch.zeros(1, 10)).sum().backward()
print(time.time(), flush=True)
if sys.argv[1] == "quick":
    from flows.cli.quick_exit import exit_now
    exit_now(0)
sys.exit(0)
"""


def one(way: str) -> tuple[float, float]:
    """(seconds from the last line to the end, CPU seconds of the whole child)."""
    before = os.times()
    done = subprocess.run([sys.executable, "-c", PROBE, way], cwd=ROOT, capture_output=True, text=True, check=True)
    end = time.time()
    after = os.times()
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return end - float(done.stdout.split()[-1]), cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    runs: dict[str, list[tuple[float, float]]] = {"teardown": [], "quick": []}
    for _ in range(a.repeats):
        for way in runs:
            runs[way].append(one(way))
    figures = {
        way: {
            "exit_s": statistics.median(r[0] for r in rs),
            "process_cpu_s": statistics.median(r[1] for r in rs),
        }
        for way, rs in runs.items()
    }
    figures["ratio_exit_quick_vs_teardown"] = figures["quick"]["exit_s"] / figures["teardown"]["exit_s"]
    text = json.dumps(
        {"repeats": a.repeats, "figures": figures, "machine": describe_machine(("prefect", "torch", "transformers"))},
        indent=2,
    )
    for way in runs:
        print(f"{way:9} exit {figures[way]['exit_s']:.2f} s  process CPU {figures[way]['process_cpu_s']:.1f} s")
    print(f"quick/teardown exit: {figures['ratio_exit_quick_vs_teardown']:.2f}")
    if a.out:
        tmp = a.out.with_suffix(a.out.suffix + ".tmp")
        tmp.write_text(text + "\n")
        tmp.replace(a.out)


if __name__ == "__main__":
    main()
