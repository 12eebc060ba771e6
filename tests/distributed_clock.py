"""A rank of a 2-process gloo group whose clock disagrees with the other's, for
tests/tasks/test_time_checkpoints.py (run by torch.multiprocessing.spawn: importable, light)."""

from __future__ import annotations

import json
import os
from pathlib import Path


def rank_main(rank: int, port: int, out: str, cases: list[list[float]]) -> None:
    """For each case (the seconds each rank's clock reads), whether this rank saves: a list
    written to `out`/rank{rank}.json. One process group serves every case (one spawn)."""
    import torch.distributed as dist
    from transformers import TrainerControl, TrainerState, TrainingArguments

    from tasks.trainers.time_checkpoints import save_every_minutes

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=2)
    try:
        args = TrainingArguments(output_dir="unused", report_to=[], use_cpu=True)
        saves = []
        for seconds_by_rank in cases:
            now = [0.0]
            callback = save_every_minutes(1.0, clock=lambda now=now: now[0])
            state = TrainerState()
            callback.on_train_begin(args, state, TrainerControl())
            now[0] = seconds_by_rank[rank]  # this rank's own clock
            saves.append(callback.on_step_end(args, state, TrainerControl()).should_save)
        Path(out, f"rank{rank}.json").write_text(json.dumps(saves))
    finally:
        dist.destroy_process_group()
    from tasks.quick_exit import exit_now

    exit_now(0)  # written: end without the module teardown over torch's and transformers' objects (~1 s CPU)
