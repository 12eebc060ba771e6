"""A rank of a 2-process gloo group whose clock disagrees with the other's, for
tests/tasks/test_time_checkpoints.py (run by torch.multiprocessing.spawn: importable, light)."""

from __future__ import annotations

import json
import os
from pathlib import Path


def rank_main(rank: int, port: int, out: str, seconds_by_rank: list[float]) -> None:
    import torch.distributed as dist
    from transformers import TrainerControl, TrainerState, TrainingArguments

    from tasks.trainers.time_checkpoints import save_every_minutes

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=2)
    try:
        now = [0.0]
        callback = save_every_minutes(1.0, clock=lambda: now[0])
        args, state = TrainingArguments(output_dir="unused", report_to=[], use_cpu=True), TrainerState()
        callback.on_train_begin(args, state, TrainerControl())
        now[0] = seconds_by_rank[rank]  # this rank's own clock
        saves = callback.on_step_end(args, state, TrainerControl()).should_save
        Path(out, f"rank{rank}.json").write_text(json.dumps(saves))
    finally:
        dist.destroy_process_group()
