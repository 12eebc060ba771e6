"""A test-only recorder of what each GRPO rank trains on, for tests/tasks/test_launch_grpo_shards.py.

`recording(folder)` wraps two methods for its duration and changes nothing they compute: the
wrappers call the real ones (TRL's generation, rewards, gather and advantages, through
`LeanGRPOTrainer._generate_and_score_completions`; Dojoflow's `lifecycle.publish_started`) and
only read their inputs and results. Each call appends one JSON line to `folder/rank-R.jsonl`:

- a batch: {"batch": step, "rank", "world", "generations", "prompts" (this rank's texts, in order),
  "rewards" (the weighted rewards of the whole global batch, as TRL gathered them),
  "advantages" (this rank's, as TRL's loss gets them), "rows" (each row-aligned tensor's rows), "dgpo_group" (DGPO's group ids)};
- the publish: {"published": whether this rank wrote the checkpoint}.

`train_recorded` is a worker entry (tasks/trainers/worker.py `Job.entry`): one rank of the
curriculum's GRPO step (`train_grpo`), recorded; `train_recorded_runs` several, one after the other
in the same processes (one launch: each process imports torch, transformers and TRL once).
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path


def _append(folder: Path, rank: int, record: dict) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / f"rank-{rank}.jsonl", "a") as f:
        f.write(json.dumps(record) + "\n")


def prompt_text(prompt) -> str:
    """A prompt's own text: the last message of a conversation (the state; the system message is shared)."""
    return prompt[-1]["content"] if isinstance(prompt, list) else prompt


@contextlib.contextmanager
def recording(folder: Path):
    from tasks.grpo import lean_trainer
    from tasks.trainers import lifecycle

    trainer_class = lean_trainer.LeanGRPOTrainer
    real_batch, real_publish = trainer_class._generate_and_score_completions, lifecycle.publish_started

    def batch(self, inputs):
        output = real_batch(self, inputs)
        _append(
            folder,
            self.accelerator.process_index,
            {
                "batch": self.state.global_step,
                "rank": self.accelerator.process_index,
                "world": self.accelerator.num_processes,
                "generations": self.num_generations,
                "prompts": [prompt_text(x["prompt"]) for x in inputs],
                "rewards": self._weighted_rewards(self._rewards_per_func).tolist(),
                "advantages": output["advantages"].tolist(),
                "rows": {k: int(v.shape[0]) for k, v in output.items() if getattr(v, "ndim", 0) >= 1},
                "dgpo_group": output["dgpo_group"].tolist() if "dgpo_group" in output else None,
            },
        )
        return output

    def publish(hf_trainer, *args, **kwargs):
        wrote = real_publish(hf_trainer, *args, **kwargs)
        _append(folder, hf_trainer.accelerator.process_index, {"published": wrote})
        return wrote

    trainer_class._generate_and_score_completions = batch
    lifecycle.publish_started = publish
    try:
        yield
    finally:
        trainer_class._generate_and_score_completions = real_batch
        lifecycle.publish_started = real_publish


def train_recorded(
    record_dir: str, settings: dict, snapshot: dict, out_dir: str, work_dir: str, model_cache_dir: str
) -> dict:
    """One rank of a GRPO curriculum step (split `random`, no parent), recorded into `record_dir`."""
    from storage.snapshot_ref import SnapshotRef
    from tasks.grpo.config import GRPOSettings
    from tasks.grpo.train import train_grpo

    with recording(Path(record_dir)):
        return train_grpo(
            GRPOSettings.model_validate(settings),
            SnapshotRef.from_dict(snapshot),
            "random",
            None,
            Path(out_dir),
            Path(work_dir),
            model_cache_dir=Path(model_cache_dir),
        )


def train_recorded_runs(runs: list[dict]) -> dict:
    """Each of `runs` (`train_recorded`'s keywords) in turn, in these processes; {"runs": their figures}."""
    return {"runs": [train_recorded(**run) for run in runs]}


def records(folder: Path) -> dict[int, list[dict]]:
    """Each rank's records, in the order it wrote them."""
    out = {}
    for path in sorted(folder.glob("rank-*.jsonl")):
        out[int(path.stem.split("-")[1])] = [json.loads(line) for line in path.read_text().splitlines()]
    return out
