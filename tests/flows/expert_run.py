"""The expert-iteration test's run in a process of its own, so that a test can kill it mid-round:
`python -m tests.flows.expert_run HOME WORK DOUBLE_DIR` (tests/flows/test_expert_iteration.py).
It runs with the trainers' libraries imported first and frozen, as the test file's runs do
(tasks/lean/closing.heap_frozen): each training start's full garbage collection then walks only
what the run made."""

import sys
from pathlib import Path

import trl

from flows.curriculum import curriculum
from tasks.lean.closing import heap_frozen
from tests.doubles.lean_process import make_repl_double
from tests.flows.test_expert_iteration import pipeline

if __name__ == "__main__":
    trl.SFTTrainer, trl.SFTConfig  # noqa: B018  (trl's lazy modules: transformers' Trainer, peft, datasets)
    home, work, double_dir = sys.argv[1:4]
    with heap_frozen():
        curriculum(config=pipeline(Path(home), make_repl_double(Path(double_dir)), Path(work)))
