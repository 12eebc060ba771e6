"""The expert-iteration test's run in a process of its own, so that a test can kill it mid-round:
`python -m tests.flows.expert_run HOME WORK DOUBLE_DIR` (tests/flows/test_expert_iteration.py)."""

import sys
from pathlib import Path

from flows.curriculum import curriculum
from tests.doubles.lean_process import make_repl_double
from tests.flows.test_expert_iteration import pipeline

if __name__ == "__main__":
    home, work, double_dir = sys.argv[1:4]
    curriculum(config=pipeline(Path(home), make_repl_double(Path(double_dir)), Path(work)))
