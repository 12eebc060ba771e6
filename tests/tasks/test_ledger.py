"""The ledger's compute figures (tasks/ledger.py): GPU seconds exist only where a GPU did
the work (on a CPU they are absent, never 0), and a generator that is not a model counts no
tokens. The GPU case runs where there is a GPU (the device machine); on CPU the None case.

    PYTHONPATH=$PWD HF_HUB_OFFLINE=1 .venv/bin/python -m pytest tests/tasks/test_ledger.py -q
"""

from __future__ import annotations

import torch

from tasks.generate.baseline import ClosingTacticsGenerator
from tasks.ledger import _total, gpu_seconds, tokens_generated


def test_gpu_seconds_are_wall_seconds_times_the_gpus_held_and_absent_without_a_gpu():
    if not torch.cuda.is_available():
        assert gpu_seconds(12.5) is None  # a CPU machine: no such figure, not 0
        return
    torch.zeros(1, device="cuda")  # this process now holds the GPU(s)
    assert gpu_seconds(12.5) == 12.5 * torch.cuda.device_count()


def test_the_baseline_is_no_model_and_counts_no_tokens():
    assert tokens_generated(ClosingTacticsGenerator()) is None


def test_a_total_of_figures_nobody_recorded_is_none_not_zero():
    assert _total([None, None]) is None and _total([]) is None
    assert _total([1.5, None, 2.0]) == 3.5
