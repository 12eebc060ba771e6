"""Dojoflow's SFT trainer against plain `trl.SFTTrainer`: the same tiny model, the same
examples, the same SFTConfig, in one run; tokens per second for both.

Plain TRL gets its dataset built before its clock starts (the chat examples Dojoflow
makes from the snapshot) and the model loaded with transformers; its clock covers
loading, `SFTTrainer(...)`, `train()` and `save_pretrained`. Dojoflow's clock covers
all of `tasks.sft.train.train_sft`: reading the snapshot's train split, building the
examples, loading, training, saving and writing its manifests. Tokens are the
non-padding input tokens the Trainer saw (`num_input_tokens_seen`), equal on both sides.
Runs alternate (plain, Dojoflow, plain, ...), one torch thread; wall and CPU seconds
(this process's, `time.process_time`: on a shared machine wall time carries others'
load); medians of --repeat; figures with the machine go to
benchmarks/results/sft-overhead.json.

    .venv/bin/python benchmarks/bench_sft_overhead.py --theorems 300 --steps 40 --repeat 5
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.machine import describe_machine  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--theorems", type=int, default=300)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "sft-overhead.json")
    a = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    import torch
    from transformers import AutoModelForCausalLM, PreTrainedTokenizerFast, TrainerCallback
    from trl import SFTTrainer

    from storage.atomic import write_json
    from storage.leandojo import import_export
    from storage.snapshot import build_snapshot
    from storage.store import Store
    from storage.synthetic import write_synthetic_export
    from tasks.models import TINY_CAUSAL_LM, resolve_model
    from tasks.sft import SFTSettings, train_sft
    from tasks.sft.config import build_sft_config
    from tasks.sft.data import build_examples, read_tactics

    class Tokens(TrainerCallback):
        """The Trainer's count of input tokens and the train loop's own seconds."""

        def on_train_begin(self, args, state, control, **kw):
            self.started, self.cpu_started = time.perf_counter(), time.process_time()

        def on_train_end(self, args, state, control, **kw):
            self.loop_s = time.perf_counter() - self.started
            self.loop_cpu_s = time.process_time() - self.cpu_started
            self.tokens = int(state.num_input_tokens_seen)

        def figures(self) -> dict:
            return {"loop_s": self.loop_s, "loop_cpu_s": self.loop_cpu_s, "tokens": self.tokens}

    torch.set_num_threads(1)  # on a shared machine, idle threads' spinning would be measured as CPU time
    where = describe_machine(("torch", "transformers", "trl"))
    work = Path(tempfile.mkdtemp(prefix="dojoflow-sft-bench-"))
    try:
        store = Store.open(work / "home")
        import_export(store, write_synthetic_export(work / "export", "bench", a.theorems, 4, seed=1))
        snapshot = build_snapshot(store, store.repo_ids())
        cache = work / "models"
        base = resolve_model(TINY_CAUSAL_LM, cache)
        settings = SFTSettings(
            training={
                "max_steps": a.steps,
                "per_device_train_batch_size": a.batch,
                "save_strategy": "no",
                "logging_steps": 10_000,
                "disable_tqdm": True,
                "seed": 0,
                "include_num_input_tokens_seen": "non_padding",
            }
        )
        tokenizer = PreTrainedTokenizerFast.from_pretrained(base)
        examples = build_examples(
            read_tactics(snapshot, "random", "train"),
            settings.system_prompt,
            tokenizer=tokenizer,
            max_state_tokens=settings.max_state_tokens,
        )
        dataset = examples.to_dataset()

        def plain(i: int) -> dict:
            out = work / f"plain-{i}"
            args = build_sft_config(settings, work / f"plain-trainer-{i}")  # the very SFTConfig Dojoflow passes
            cb = Tokens()
            t, c = time.perf_counter(), time.process_time()
            model = AutoModelForCausalLM.from_pretrained(base)
            tok = PreTrainedTokenizerFast.from_pretrained(base)
            trainer = SFTTrainer(model=model, args=args, train_dataset=dataset, processing_class=tok, callbacks=[cb])
            trainer.train()
            trainer.model.save_pretrained(out)
            tok.save_pretrained(out)
            return {"wall_s": time.perf_counter() - t, "cpu_s": time.process_time() - c, **cb.figures()}

        def dojoflow(i: int) -> dict:
            cb = Tokens()
            t, c = time.perf_counter(), time.process_time()
            train_sft(
                settings,
                snapshot,
                "random",
                None,
                work / f"dojo-{i}",
                work / f"dojo-work-{i}",
                model_cache_dir=cache,
                callbacks=[cb],
            )
            return {"wall_s": time.perf_counter() - t, "cpu_s": time.process_time() - c, **cb.figures()}

        plain(-1), dojoflow(-1)  # warm-up: first-call imports and caches, not counted
        runs = {"plain": [], "dojoflow": []}
        for i in range(a.repeat):
            runs["plain"].append(plain(i))
            runs["dojoflow"].append(dojoflow(i))
            for p in work.glob(f"*-{i}"):
                shutil.rmtree(p, ignore_errors=True)
        keys = ("wall_s", "cpu_s", "loop_s", "loop_cpu_s", "tokens")
        med = {side: {k: statistics.median(r[k] for r in rs) for k in keys} for side, rs in runs.items()}
        for side in med.values():
            for k in ("wall_s", "cpu_s", "loop_s", "loop_cpu_s"):
                side[f"tokens_per_{k}"] = side["tokens"] / side[k]
        overhead = {k: med["dojoflow"][k] / med["plain"][k] - 1 for k in ("wall_s", "cpu_s", "loop_s", "loop_cpu_s")}
        print(
            f"{len(examples)} examples, {a.steps} steps x batch {a.batch}, tiny model, torch {torch.__version__}, "
            f"{where['cpu_model']}, nproc {where['nproc']}, load {where['loadavg']}; medians of {a.repeat}"
        )
        print(
            f"{'':10} {'tokens':>7} | {'end to end: wall s':>18} {'tokens/s':>8} {'CPU s':>6} {'tokens/CPU s':>12} | "
            f"{'train loop: wall s':>18} {'tokens/s':>8} {'CPU s':>6} {'tokens/CPU s':>12}"
        )
        for side, m in med.items():
            print(
                f"{side:10} {m['tokens']:>7.0f} | {m['wall_s']:>18.2f} {m['tokens_per_wall_s']:>8.0f} {m['cpu_s']:>6.2f} "
                f"{m['tokens_per_cpu_s']:>12.0f} | {m['loop_s']:>18.2f} {m['tokens_per_loop_s']:>8.0f} "
                f"{m['loop_cpu_s']:>6.2f} {m['tokens_per_loop_cpu_s']:>12.0f}"
            )
        print("Dojoflow overhead (time over plain TRL's): " + ", ".join(f"{k} {v:+.1%}" for k, v in overhead.items()))
        write_json(
            a.out,
            {
                "examples": len(examples),
                "steps": a.steps,
                "batch": a.batch,
                "repeat": a.repeat,
                "torch_threads": torch.get_num_threads(),
                "machine": where,
                "medians": med,
                "overhead": overhead,
                "runs": runs,
            },
        )
        print(f"results: {a.out}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
