"""GPU check of launched training (docs/scaling.md): Dojoflow's SFT and GRPO against plain TRL on
one machine with CUDA GPUs, bf16, 1 process and (with 2+ GPUs) 2 processes. Run once, on one H200
(1 process; figures and what they do not show: docs/scaling.md, "The GPU check"); since then both
sides load bf16 weights and write the same last-step checkpoint, not yet rerun on a GPU. The
2-process runs need 2 GPUs and never ran.

The model is Qwen2-0.5B-like (hidden 896, 24 layers, 14 heads, 2 KV heads, MLP 4864, vocabulary
151936), built locally from a config with random weights (nothing downloads) and the tiny
builtin tokenizer (its ids fit the vocabulary). Every side trains the same chat examples with
the same SFTConfig/GRPOConfig arguments; Dojoflow runs through `train_in_child` (torchrun + the
worker + the supervisor), plain TRL through `torchrun` on a 30-line script. Per run: wall time,
step time (`train_runtime / steps`, and the median of the per-step `step_time` GRPO logs),
tokens/s (`num_tokens` in the log / train_runtime), peak GPU memory (nvidia-smi, polled every
0.2 s over the run), and the ratio Dojoflow / plain. On one H200, 1 process: 3.5 minutes at the
default steps, 4.5 at `--sft-steps 60 --grpo-steps 8`. A PYTHONPATH given (carried wheels) reaches
the children after the root.

    PYTHONPATH=$PWD HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1 python benchmarks/gpu_check.py [--sft-steps 30] [--grpo-steps 4] \
        [--out gpu_check.json] [--logs DIR] [--smoke]

`--smoke` runs the same code on CPU with the tiny model and 2 steps (checks the script, times nothing).
GRPO's plain side rewards completion length (no verifier); Dojoflow's uses the replay backend on
the sample store (tests/doubles/sample_store.py, no Lean), so the GRPO ratio includes reward cost.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.machine import describe_machine  # noqa: E402

QWEN2_05B_LIKE = {
    "hidden_size": 896,
    "num_hidden_layers": 24,
    "num_attention_heads": 14,
    "num_key_value_heads": 2,
    "intermediate_size": 4864,
    "vocab_size": 151936,
    "max_position_embeddings": 4096,
    "rope_theta": 1000000.0,
    "tie_word_embeddings": True,
}

PLAIN_SFT = """
import json, sys
from datasets import Dataset
from transformers import AutoModelForCausalLM, AutoTokenizer
from trl import SFTConfig, SFTTrainer
a = json.loads(open(sys.argv[1]).read())
tok = AutoTokenizer.from_pretrained(a["model"])
model = AutoModelForCausalLM.from_pretrained(a["model"], dtype="bfloat16" if a["bf16"] else None)
data = Dataset.from_dict({"prompt": a["prompts"], "completion": a["completions"]})
t = SFTTrainer(model=model, args=SFTConfig(output_dir=a["out"], **a["sft"]), train_dataset=data, processing_class=tok)
t.train()
if t.is_world_process_zero():
    json.dump(t.state.log_history, open(a["out"] + ".log.json", "w"))
"""

PLAIN_GRPO = """
import json, sys
from datasets import Dataset
from transformers import AutoModelForCausalLM, AutoTokenizer
from trl import GRPOConfig, GRPOTrainer
a = json.loads(open(sys.argv[1]).read())
tok = AutoTokenizer.from_pretrained(a["model"])
model = AutoModelForCausalLM.from_pretrained(a["model"], dtype="bfloat16" if a["bf16"] else None)
data = Dataset.from_dict({"prompt": a["prompts"]})
def length(completions, **kw):
    return [min(len(str(c)), 40) / 40 for c in completions]
t = GRPOTrainer(model=model, reward_funcs=length, args=GRPOConfig(output_dir=a["out"], **a["grpo"]), train_dataset=data,
                processing_class=tok)
t.train()
if t.is_world_process_zero():
    json.dump(t.state.log_history, open(a["out"] + ".log.json", "w"))
"""


class PeakGpuMemory:
    """The largest `memory.used` nvidia-smi reports (MiB, summed over GPUs) while it runs."""

    def __init__(self) -> None:
        self.peak, self._stop = 0, threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def _poll(self) -> None:
        smi = shutil.which("nvidia-smi")
        while smi and not self._stop.wait(0.2):
            out = subprocess.run(
                [smi, "--query-gpu=memory.used", "--format=csv,noheader,nounits"], capture_output=True, text=True
            )
            used = sum(int(x) for x in out.stdout.split() if x.strip().isdigit())
            self.peak = max(self.peak, used)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def build_model(tmp: Path, smoke: bool) -> str:
    """The Qwen2-0.5B-like model (random weights) with the tiny builtin tokenizer, saved locally."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from tasks.models import TINY_CAUSAL_LM, load_causal_lm, resolve_model

    tiny = resolve_model(TINY_CAUSAL_LM, tmp / "models")
    if smoke:
        return str(tiny)
    _, tokenizer = load_causal_lm(TINY_CAUSAL_LM, tmp / "models")
    config = Qwen2Config(**QWEN2_05B_LIKE, bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id)
    model = Qwen2ForCausalLM(config)
    out = tmp / "qwen2-0.5b-like"
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return str(out)


LOGS: list[Path] = []  # where each run's output is kept (--logs), if anywhere


def run(cmd: list[str], env: dict, label: str) -> tuple[float, str]:
    """(wall seconds, stdout); stdout and stderr also go to `<--logs>/<label>.log`."""
    start = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    for folder in LOGS:
        (folder / f"{label}.log").write_text(done.stdout + "\n--- stderr ---\n" + done.stderr)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:6])} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return time.perf_counter() - start, done.stdout


def progress_log(stdout: str) -> list[dict]:
    """Dojoflow's relayed progress lines (`step 3/30: loss 2.31, num_tokens 1.2e+04; about 5s left`)
    as log entries: its last Trainer checkpoint is saved before the final `train_runtime` entry."""
    entries = []
    for line in stdout.splitlines():
        m = re.search(r"step \d+(?:/\d+)?: (.*?)(?:; about .* left)?$", line)  # the estimate is no figure
        if m:
            pairs = (item.rsplit(" ", 1) for item in m.group(1).split(", ") if " " in item)
            entries.append({k: float(v) for k, v in pairs if re.fullmatch(r"-?[\d.]+(e[+-]?\d+)?", v)})
    return entries


def figures(log_history: list[dict], wall: float, peak_mib: int) -> dict:
    end = next((e for e in reversed(log_history) if "train_runtime" in e), {})
    steps = [e for e in log_history if "loss" in e]
    runtime = end.get("train_runtime")
    tokens = max((e.get("num_tokens", 0) for e in steps), default=0)
    step_times = [e["step_time"] for e in steps if "step_time" in e]  # GRPO logs each step's time; SFT does not
    return {
        "wall_s": round(wall, 2),
        "train_runtime_s": runtime,
        "step_s": round(runtime / len(steps), 4) if runtime and steps else None,
        "step_time_median_s": round(statistics.median(step_times), 4) if step_times else None,
        "tokens_per_s": round(tokens / runtime, 1) if runtime and tokens else None,
        "peak_gpu_mib": peak_mib,
        "losses": [e["loss"] for e in steps][:5],
    }


DOJOFLOW = """
import json, logging, sys
from pathlib import Path
logging.basicConfig(level=logging.INFO, stream=sys.stdout)
from storage.snapshot_ref import SnapshotRef
from tasks.trainers.launch import LaunchSettings
from tasks.trainers.registry import get
from tasks.trainers.supervise import train_in_child
a = json.loads(open(sys.argv[1]).read())
settings = get(a["trainer"]).settings.model_validate(a["settings"])
train_in_child(a["trainer"], settings, SnapshotRef.from_dict(a["snapshot"]), "random", None, Path(a["out"]),
               Path(a["work"]), model_cache_dir=Path(a["cache"]), launch=LaunchSettings(processes=a["processes"]))
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sft-steps", type=int, default=30)
    parser.add_argument("--grpo-steps", type=int, default=4)
    parser.add_argument("--out", default="gpu_check.json")
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--logs", type=Path, help="a folder for each run's output (to find why a ratio is bad)")
    args = parser.parse_args()
    if args.logs:
        args.logs.mkdir(parents=True, exist_ok=True)
        LOGS.append(args.logs)
    logging.disable(logging.WARNING)
    import torch

    gpus = torch.cuda.device_count()
    if not gpus and not args.smoke:
        raise SystemExit("no CUDA GPU here: run on a GPU machine, or --smoke to check the script on CPU")
    bf16 = bool(gpus and torch.cuda.is_bf16_supported())
    sft_steps, grpo_steps = (2, 1) if args.smoke else (args.sft_steps, args.grpo_steps)
    # ROOT first, then any PYTHONPATH given (a GPU machine's carried wheels live there).
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, "PYTHONPATH": path, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    report: dict = {"machine": describe_machine(("torch", "transformers", "trl")), "gpus": gpus, "bf16": bf16}
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        report["results"] = measure(tmp, build_model(tmp, args.smoke), bf16, gpus, sft_steps, grpo_steps, env)
    for kind in ("sft", "grpo"):
        for n in (1, 2):
            pair = report["results"].get(f"{kind}-{n}")
            if pair and "skipped" not in pair and all(pair[s].get("step_s") for s in ("plain", "dojoflow")):
                pair["ratio_step"] = round(pair["dojoflow"]["step_s"] / pair["plain"]["step_s"], 3)
                pair["ratio_wall"] = round(pair["dojoflow"]["wall_s"] / pair["plain"]["wall_s"], 3)
    Path(args.out).write_text(json.dumps(report, indent=1))
    print(json.dumps({k: v for k, v in report.items() if k != "machine"}, indent=1))


def measure(tmp: Path, model: str, bf16: bool, gpus: int, sft_steps: int, grpo_steps: int, env: dict) -> dict:
    from storage.snapshot import build_snapshot
    from tasks.models import TINY_CAUSAL_LM, load_causal_lm
    from tasks.sft.config import DEFAULT_SYSTEM_PROMPT
    from tasks.sft.data import build_examples, read_tactics
    from tests.doubles.sample_store import sample_store
    from tests.fixtures_snapshot import make_snapshot, synthetic_rows

    snapshot = make_snapshot(tmp / "snap", synthetic_rows(400, ("repoA",)))
    _, tokenizer = load_causal_lm(TINY_CAUSAL_LM, tmp / "models")
    ex = build_examples(read_tactics(snapshot, "random", "train"), DEFAULT_SYSTEM_PROMPT, tokenizer=tokenizer)
    store = sample_store(tmp / "home")
    grpo_snapshot = build_snapshot(store, [r["repo_id"] for r in store.repositories()])
    precision = {"bf16": bf16} if gpus else {"use_cpu": True, "bf16": False}
    # The weights' dtype the plain script loads: 'auto' would read the built model's float32 (the real
    # Qwen2-0.5B's config says bfloat16); the first GPU run compared fp32 weights with bf16 ones.
    dtype = "bfloat16" if bf16 else "auto"
    # Both sides write a Trainer checkpoint at the last step (Dojoflow always does, to resume), inside train_runtime.
    common = {"save_strategy": "steps", "logging_steps": 1, "disable_tqdm": True, "report_to": "none", **precision}
    results: dict = {}
    for n in (1, 2):
        if n > max(gpus, 1) and not (n == 2 and gpus == 0):
            results[f"sft-{n}"] = results[f"grpo-{n}"] = {
                "skipped": f"{n} processes need {n} GPUs; this machine has {gpus}"
            }
            continue
        batch = 16 // n
        sft = {
            **common,
            "max_steps": sft_steps,
            "save_steps": sft_steps,
            "per_device_train_batch_size": batch,
            "max_length": 512,
        }
        grpo = {
            **common,
            "max_steps": grpo_steps,
            "save_steps": grpo_steps,
            "per_device_train_batch_size": 8 // n * 2,
            "num_generations": 4,
            "max_completion_length": 64,
        }
        results[f"sft-{n}"] = pair(
            tmp,
            f"sft-{n}",
            n,
            env,
            PLAIN_SFT,
            {"sft": sft},
            model,
            bf16,
            ex,
            snapshot,
            "sft",
            {"model": model, "model_dtype": dtype, "training": sft},
        )
        results[f"grpo-{n}"] = pair(
            tmp,
            f"grpo-{n}",
            n,
            env,
            PLAIN_GRPO,
            {"grpo": grpo},
            model,
            bf16,
            ex,
            grpo_snapshot,
            "grpo",
            {
                "model": model,
                "model_dtype": dtype,
                "max_prompts": 64,
                "rewards": {"lean_tactic": 1.0, "format": 0.1},
                "training": grpo,
            },
        )
    return results


def pair(tmp, name, n, env, plain_script, plain_args, model, bf16, ex, snapshot, trainer, settings) -> dict:
    """Plain TRL then Dojoflow, the same arguments, n processes."""
    out: dict = {}
    spec = {
        "model": model,
        "bf16": bf16,
        "prompts": ex.prompts[:256],
        "completions": ex.completions[:256],
        "out": str(tmp / f"plain-{name}"),
        **plain_args,
    }
    (tmp / f"plain-{name}.json").write_text(json.dumps(spec))
    (tmp / "plain.py").write_text(plain_script)
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(n)]
    with PeakGpuMemory() as mem:
        wall, _ = run([*cmd, str(tmp / "plain.py"), str(tmp / f"plain-{name}.json")], env, f"plain-{name}")
    out["plain"] = figures(json.loads(Path(spec["out"] + ".log.json").read_text()), wall, mem.peak)
    job = {
        "trainer": trainer,
        "settings": settings,
        "snapshot": snapshot.to_dict(),
        "processes": n,
        "out": str(tmp / f"dojo-{name}"),
        "work": str(tmp / f"work-{name}"),
        "cache": str(tmp / "models"),
    }
    (tmp / f"dojo-{name}.json").write_text(json.dumps(job))
    with PeakGpuMemory() as mem:
        wall, stdout = run([sys.executable, "-c", DOJOFLOW, str(tmp / f"dojo-{name}.json")], env, f"dojoflow-{name}")
    out["dojoflow"] = figures(progress_log(stdout), wall, mem.peak)
    return out


if __name__ == "__main__":
    main()
