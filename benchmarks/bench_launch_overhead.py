"""Dojoflow's launch overhead on CPU: 2-process SFT through `train_in_child` (torchrun + the
worker + the supervisor streaming its output) against plain `torchrun` running a TRL script on
the same data, model and SFTConfig (docs/scaling.md).

Both sides: the tiny builtin causal LM, the same chat examples (written once to JSON), per-device
batch 4 x 2 processes, `max_steps` steps, no checkpoints, OMP_NUM_THREADS=1, interleaved in ABBA
order, median of --repeats (and the median of each repeat's ratio). Measured per side: wall time from the start of the command to its end, and start-up,
the time until the first training step's log line appears on the parent's side (imports, model
and data loading, process group). Goals: wall within 5% of plain, start-up within 3 s of plain.
The box may be loaded by other work: the 1-minute load average is recorded before and after.

    PYTHONPATH=$PWD HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/bench_launch_overhead.py [--steps 8] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.machine import describe_machine  # noqa: E402

PLAIN = """
import json, sys
from datasets import Dataset
from transformers import AutoModelForCausalLM, AutoTokenizer
from trl import SFTConfig, SFTTrainer
a = json.loads(open(sys.argv[1]).read())
tok = AutoTokenizer.from_pretrained(a["model"])
model = AutoModelForCausalLM.from_pretrained(a["model"])
data = Dataset.from_dict({"prompt": a["prompts"], "completion": a["completions"]})
cfg = SFTConfig(output_dir=a["out"], **a["training"])
trainer = SFTTrainer(model=model, args=cfg, train_dataset=data, processing_class=tok)
trainer.train()
if trainer.is_world_process_zero():
    trainer.save_model(a["out"])
"""


def _timed(cmd: list[str], env: dict, first_step: str) -> tuple[float, float | None]:
    """(wall seconds, seconds until a line containing `first_step`)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    first = None
    for line in proc.stdout:
        if first is None and first_step in line:
            first = time.perf_counter() - start
    if proc.wait() != 0:
        raise SystemExit(f"{cmd[:4]} failed")
    return time.perf_counter() - start, first


DOJOFLOW = """
import json, logging, sys
from pathlib import Path
logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="%(name)s %(message)s")
from storage.snapshot_ref import SnapshotRef
from tasks.sft import SFTSettings
from tasks.trainers.launch import LaunchSettings
from tasks.trainers.supervise import train_in_child
a = json.loads(open(sys.argv[1]).read())
train_in_child("sft", SFTSettings(training=a["training"]), SnapshotRef.from_dict(a["snapshot"]), "random", None,
               Path(a["out"]), Path(a["work"]), model_cache_dir=Path(a["cache"]), launch=LaunchSettings(processes=2))
"""


def prepare(tmp: Path, steps: int) -> dict:
    from tasks.models import TINY_CAUSAL_LM, load_causal_lm, resolve_model
    from tasks.sft.config import DEFAULT_SYSTEM_PROMPT
    from tasks.sft.data import build_examples, read_tactics
    from tests.fixtures_snapshot import make_snapshot, synthetic_rows

    snapshot = make_snapshot(tmp / "snap", synthetic_rows(200, ("repoA",)))
    cache = tmp / "models"
    model = resolve_model(TINY_CAUSAL_LM, cache)
    _, tokenizer = load_causal_lm(TINY_CAUSAL_LM, cache)
    ex = build_examples(read_tactics(snapshot, "random", "train"), DEFAULT_SYSTEM_PROMPT, tokenizer=tokenizer)
    training = {
        "max_steps": steps,
        "per_device_train_batch_size": 4,
        "save_strategy": "no",
        "logging_steps": 1,
        "disable_tqdm": True,
        "report_to": "none",
        "learning_rate": 1e-3,
        "use_cpu": True,
        "bf16": False,
        "completion_only_loss": True,
        "packing": False,
        "activation_checkpointing": False,
    }
    return {
        "model": str(model),
        "prompts": ex.prompts,
        "completions": ex.completions,
        "training": training,
        "snapshot": snapshot.to_dict(),
        "cache": str(cache),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    load_before = os.getloadavg()[0]
    results: dict[str, list] = {"plain": [], "dojoflow": []}
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        job = prepare(tmp, args.steps)
        for i in range(args.repeats):
            # ABBA: on a box whose load drifts, a fixed order would charge the drift to one side
            for side in ("plain", "dojoflow") if i % 2 == 0 else ("dojoflow", "plain"):
                spec = {**job, "out": str(tmp / f"{side}{i}"), "work": str(tmp / f"work-{side}{i}")}
                spec_file = tmp / f"{side}{i}.json"
                spec_file.write_text(json.dumps(spec))
                if side == "plain":
                    script = tmp / "plain_sft.py"
                    script.write_text(PLAIN)
                    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"]
                    cmd += [str(script), str(spec_file)]
                    marker = "'loss'"
                else:
                    cmd = [sys.executable, "-c", DOJOFLOW, str(spec_file)]
                    marker = "step 1/"
                results[side].append(_timed(cmd, env, marker))
    med = {
        s: (statistics.median(w for w, _ in r), statistics.median(f for _, f in r if f is not None))
        for s, r in results.items()
    }
    report = {
        "command": " ".join(sys.argv),
        "steps": args.steps,
        "repeats": args.repeats,
        "wall_s": {s: round(m[0], 2) for s, m in med.items()},
        "to_first_step_s": {s: round(m[1], 2) for s, m in med.items()},
        "wall_ratio": round(med["dojoflow"][0] / med["plain"][0], 3),
        "wall_ratio_per_repeat_median": round(
            statistics.median(d[0] / p[0] for p, d in zip(results["plain"], results["dojoflow"])), 3
        ),
        "start_up_extra_s": round(med["dojoflow"][1] - med["plain"][1], 2),
        "runs": results,
        "load_average_1min": {"before": load_before, "after": os.getloadavg()[0]},
        "machine": describe_machine(("torch", "transformers", "trl")),
    }
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
