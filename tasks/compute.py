"""What this process spends: CPU seconds, GPU seconds and tokens generated. The training step
(tasks/checkpoints.py) and proof search (tasks/proving/) record these figures beside their
results; the ledger (tasks/ledger.py) gathers them for a run's card. Never imports torch: a
figure reads torch only where the process has already loaded it.

    python -c "from tasks.compute import process_cpu_seconds; print(process_cpu_seconds())"
"""

from __future__ import annotations

import sys


def process_cpu_seconds() -> float:
    """CPU seconds (user + system) of this process and its finished children."""
    import psutil

    t = psutil.Process().cpu_times()
    return float(t.user + t.system + getattr(t, "children_user", 0.0) + getattr(t, "children_system", 0.0))


def gpu_name() -> str | None:
    """The GPU's name when torch is already loaded and sees one (never imports torch for it)."""
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_available():
        return None
    return f"{torch.cuda.device_count()} x {torch.cuda.get_device_name(0)}"


def gpu_seconds(wall_seconds: float) -> float | None:
    """GPU seconds of work that took `wall_seconds` in this process: the wall seconds times the
    GPUs this process holds, once it has initialised CUDA; None where it used no GPU (on a CPU
    machine the figure does not exist: it is never 0)."""
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_available() or not torch.cuda.is_initialized():
        return None
    return round(wall_seconds * torch.cuda.device_count(), 3)


def tokens_generated(generator) -> int | None:
    """Tokens a generator (or the one it wraps) has generated so far; None for one that is not a
    model (the closing-tactics baseline) or does not count them."""
    while generator is not None:
        cell = getattr(generator, "tokens", None)
        if isinstance(cell, list):
            return int(cell[0])
        generator = getattr(generator, "inner", None)
    return None
