"""Batched versus one-state-at-a-time tactic generation on the tiny model, in one run.

What is timed is the project's generator, `tasks.generate.checkpoint.CheckpointGenerator`
(tasks/sft/generate.py underneath: beam search with k beams, log-probabilities rescored),
over the initial proof states of the sample's theorems: once with `batch_size` states per
forward pass, once with one state per call (the baseline). Both must propose the same
tactics (compared as sets: padding can reorder near-ties). Figures are medians of repeats.

    PYTHONPATH=$PWD HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/bench_proving_generation.py
    PYTHONPATH=$PWD HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/bench_proving_generation.py --states 16 --repeats 1
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.machine import describe_machine  # noqa: E402


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--states", type=int, default=32)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--k", type=int, default=8)
    ap.add_argument("--max-new-tokens", type=int, default=24)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "proving-generation.json"))
    args = ap.parse_args(argv)

    import torch

    from tasks.generate import GeneratorSettings, TacticQuery
    from tasks.generate.checkpoint import CheckpointGenerator
    from tasks.models.loading import resolve_model
    from tests.doubles.sample_store import sample_store

    tmp = Path(tempfile.mkdtemp(prefix="bench-generation-"))
    store = sample_store(tmp / "home")
    rows = store.read_table("tactics", columns=["idx", "state_before"]).to_pylist()
    states = [r["state_before"] for r in rows if r["idx"] == 0][: args.states]
    queries = [TacticQuery(s) for s in states]
    folder = resolve_model("builtin:tiny-causal-lm", tmp / "models")
    figures, outputs = {}, {}
    for name, size in (("batched", args.batch_size), ("one_at_a_time", 1)):
        settings = GeneratorSettings(batch_size=size, max_new_tokens=args.max_new_tokens)
        gen = CheckpointGenerator.load(folder, settings, tmp / "models")
        times = []
        for _ in range(args.repeats):
            started = time.perf_counter()
            outputs[name] = gen.generate(queries, args.k)
            times.append(time.perf_counter() - started)
        figures[name] = {
            "batch_size": size,
            "median_seconds": round(statistics.median(times), 3),
            "states_per_second": round(len(states) / statistics.median(times), 2),
            "seconds": [round(t, 3) for t in times],
        }
    same = sum({t for t, _ in a} == {t for t, _ in b} for a, b in zip(outputs["batched"], outputs["one_at_a_time"]))
    result = {
        "benchmark": "batched vs one-state-at-a-time tactic generation (tiny model, beam search)",
        "states": len(states),
        "k": args.k,
        "max_new_tokens": args.max_new_tokens,
        "repeats": args.repeats,
        "torch_threads": torch.get_num_threads(),
        **figures,
        "speedup": round(figures["one_at_a_time"]["median_seconds"] / figures["batched"]["median_seconds"], 2),
        "states_with_the_same_tactics": same,
        "machine": describe_machine(("torch", "transformers")),
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(
        f"batched ({args.batch_size}/pass): {figures['batched']['states_per_second']} states/s; one at a time: "
        f"{figures['one_at_a_time']['states_per_second']} states/s; speedup {result['speedup']}x; "
        f"same tactics for {same}/{len(states)} states"
    )
    return result


if __name__ == "__main__":
    main()
