"""One GRPO step on the CPU, split into generation, reward and backward time; and Lean-reward
computation sequential (1 worker) versus concurrent (`reward.workers`), in the same run.

What is timed is the project's own code: `LeanGRPOTrainer._generate_and_score_completions`
(TRL's generation with transformers, then scoring; the reward part is timed inside it by a
thin wrapper around the `lean_tactic` reward) and `compute_loss` + `backward` on the batch.
Rewards come from an in-process backend double that answers every tactic after 50 ms
(`--check-ms`), as a Lean REPL might; no Lean runs. Sequential vs concurrent: the same
completions scored by `LeanTacticReward` through a fresh `LeanRewarder` (empty cache) with 1
worker and with N workers; the ratio is the speed-up. Figures are medians of `--repeats`
runs on the tiny builtin model. (The GPU / vLLM part of issue 10's benchmark is not here:
this machine has no GPU.)

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/bench_grpo_step.py               # writes benchmarks/results/grpo_step.json
    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/bench_grpo_step.py --prompts 2 --repeats 1 --out /tmp/g.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.machine import describe_machine  # noqa: E402


class SlowDouble:
    """A backend double: every tactic answered after `delay` seconds; the verdict is a hash of the text."""

    name = "double"

    def __init__(self, delay: float):
        self.delay = delay

    def start(self, theorem):
        from tasks.lean.backend import ProofState, TacticResult

        return TacticResult("state", ProofState("0", "n : ℕ\n⊢ n + 0 = n"))

    def run_tactic(self, theorem, state, tactic):
        from tasks.lean.backend import ProofState, TacticResult

        time.sleep(self.delay)
        h = int(hashlib.sha256(tactic.encode()).hexdigest(), 16) % 3
        if h == 0:
            return TacticResult("finished")
        if h == 1:
            return TacticResult("state", ProofState(str(h), "n : ℕ\n⊢ n = n"))
        return TacticResult("error", message="unknown tactic")

    def check_proof(self, theorem, proof):
        raise NotImplementedError

    def close(self):
        pass


class Timed:
    """Wraps a reward function; adds its wall time to `seconds`."""

    def __init__(self, func):
        self.func, self.__name__, self.seconds = func, func.__name__, 0.0

    def __call__(self, *args, **kwargs):
        t = time.perf_counter()
        try:
            return self.func(*args, **kwargs)
        finally:
            self.seconds += time.perf_counter() - t


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--prompts", type=int, default=4, help="prompts per step (each gets --generations completions)")
    p.add_argument("--generations", type=int, default=4)
    p.add_argument("--max-completion-length", type=int, default=16)
    p.add_argument("--check-ms", type=float, default=50.0)
    p.add_argument("--workers", type=int, default=8)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "grpo_step.json")
    a = p.parse_args(argv)

    import datasets
    import torch

    from tasks.grpo.config import GRPOSettings, RewardSettings, build_grpo_config
    from tasks.grpo.data import spec_json
    from tasks.grpo.lean_trainer import LeanGRPOTrainer
    from tasks.grpo.rewards import LeanRewarder, LeanTacticReward
    from tasks.lean.backend import TheoremSpec
    from tasks.models import TINY_CAUSAL_LM, load_causal_lm

    torch.manual_seed(0)
    tmp = Path(tempfile.mkdtemp(prefix="bench-grpo-"))
    model, tok = load_causal_lm(TINY_CAUSAL_LM, tmp / "models")
    theorem = spec_json(TheoremSpec("bench", "", "", "B.lean", "bench.t", "theorem t (n : Nat) : n + 0 = n"))
    rows = [
        {"prompt": [{"role": "user", "content": f"n{i} : ℕ\n⊢ n{i} + 0 = n{i}"}], "theorem": theorem, "prefix": "[]"}
        for i in range(a.prompts)
    ]
    g = a.generations
    settings = GRPOSettings(
        algorithm="grpo",
        algorithm_config={"beta": 0.0},
        training={
            "num_generations": g,
            "per_device_train_batch_size": a.prompts * g,
            "max_completion_length": a.max_completion_length,
            "temperature": 1.5,
        },
    )
    double = SlowDouble(a.check_ms / 1000)
    concurrent = Timed(LeanTacticReward(LeanRewarder(double, RewardSettings(workers=a.workers))))
    trainer = LeanGRPOTrainer(
        model=model,
        reward_funcs=[concurrent],
        args=build_grpo_config(settings, tmp / "out"),
        train_dataset=datasets.Dataset.from_list(rows),
        processing_class=tok,
        algorithm=settings.resolved_algorithm(),
    )
    trainer.model.train()
    trainer.current_gradient_accumulation_steps = 1  # set by Trainer's loop, which the benchmark does not run
    inputs = [r for r in rows for _ in range(g)]
    runs = []
    for _ in range(a.repeats):
        concurrent.func.rewarder = LeanRewarder(double, RewardSettings(workers=a.workers))  # empty cache
        concurrent.seconds = 0.0
        t0 = time.perf_counter()
        batch = trainer._generate_and_score_completions(inputs)
        t1 = time.perf_counter()
        loss = trainer.compute_loss(trainer.model, batch)
        loss.backward()
        trainer.model.zero_grad(set_to_none=True)
        t2 = time.perf_counter()
        texts = tok.batch_decode(batch["completion_ids"], skip_special_tokens=True)
        completions = [[{"role": "assistant", "content": t}] for t in texts]
        kwargs = {"theorem": [theorem] * len(texts), "prefix": ["[]"] * len(texts)}
        timings = {}
        for name, workers in (("sequential", 1), ("concurrent", a.workers)):
            fn = LeanTacticReward(LeanRewarder(double, RewardSettings(workers=workers)))
            t = time.perf_counter()
            fn([None] * len(texts), completions, **kwargs)
            timings[name] = time.perf_counter() - t
            checks = fn.rewarder.stats["checks"]
            fn.rewarder.close()
        runs.append(
            {
                "step_reward_s": concurrent.seconds,
                "step_generation_s": (t1 - t0) - concurrent.seconds,
                "step_backward_s": t2 - t1,
                "reward_sequential_s": timings["sequential"],
                "reward_concurrent_s": timings["concurrent"],
                "distinct_checks": checks,
            }
        )
    med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    result = {
        "benchmark": "grpo_step",
        "command": "HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/bench_grpo_step.py " + " ".join(argv or sys.argv[1:]),
        "sizes": {
            "prompts": a.prompts,
            "generations": g,
            "completions": a.prompts * g,
            "max_completion_length": a.max_completion_length,
            "check_ms": a.check_ms,
            "workers": a.workers,
            "model": TINY_CAUSAL_LM,
            "repeats": a.repeats,
        },
        "median_seconds": {k: round(v, 4) for k, v in med.items() if k.endswith("_s")},
        "distinct_checks_median": med["distinct_checks"],
        "reward_speedup_concurrent_vs_sequential": round(med["reward_sequential_s"] / med["reward_concurrent_s"], 2),
        "runs": runs,
        "machine": describe_machine(("torch", "transformers", "trl")),
    }
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(result, indent=2) + "\n")
    print(
        json.dumps(
            {k: result[k] for k in ("sizes", "median_seconds", "reward_speedup_concurrent_vs_sequential")}, indent=2
        )
    )
    return result


if __name__ == "__main__":
    main()
