"""SFT evaluation on the CPU: batched generation (what `evaluate_sft` runs) against one state per call.

What is timed is the project's own code: `tasks.sft.generate.generate_tactics_batch` over
N proof states of the shipped sample's train split, with the tiny builtin model, beam
search with k=4 beams and 48 new tokens at most (the evaluation defaults), in batches of
`--batch` left-padded states (the default `evaluation.batch_size`), against the
baseline of one `generate_tactics` call per state (batch 1), in the same run. Both must
return the same tactics. Figures are medians of `--repeats` runs.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/bench_sft_eval.py        # writes benchmarks/results/sft_eval.json
    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/bench_sft_eval.py --states 16 --repeats 1 --out /tmp/e.json
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


def sample_states(n: int) -> list[str]:
    """The first n proof states of the sample's train splits (LeanDojo export JSON)."""
    from storage.sample import SAMPLE_REPOS, SAMPLE_ROOT

    states = []
    for repo in SAMPLE_REPOS:
        for theorem in json.loads((SAMPLE_ROOT / "leandojo" / repo / "random" / "train.json").read_text()):
            states += [t["state_before"] for t in theorem["traced_tactics"]]
    return states[:n]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--states", type=int, default=64)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "sft_eval.json"))
    args = p.parse_args()

    from tasks.models import TINY_CAUSAL_LM, load_causal_lm
    from tasks.sft.generate import generate_tactics, generate_tactics_batch

    with tempfile.TemporaryDirectory() as cache:
        model, tokenizer = load_causal_lm(TINY_CAUSAL_LM, cache)
    states = sample_states(args.states)
    kw = {"max_new_tokens": 48}

    def one_per_call():
        return [generate_tactics(model, tokenizer, s, 4, **kw) for s in states]

    def batched():
        out = []
        for i in range(0, len(states), args.batch):
            out += generate_tactics_batch(model, tokenizer, states[i : i + args.batch], 4, **kw)
        return out

    timings = {"one_per_call": [], "batched": []}
    results = {}
    for _ in range(args.repeats):
        for name, fn in (("one_per_call", one_per_call), ("batched", batched)):
            start = time.perf_counter()
            results[name] = fn()
            timings[name].append(time.perf_counter() - start)
    same = [[t for t, _ in a] for a in results["one_per_call"]] == [[t for t, _ in b] for b in results["batched"]]
    medians = {k: statistics.median(v) for k, v in timings.items()}
    report = {
        "states": len(states),
        "batch": args.batch,
        "beams": 4,
        "max_new_tokens": 48,
        "repeats": args.repeats,
        "median_seconds": medians,
        "speedup": medians["one_per_call"] / medians["batched"],
        "same_tactics": same,
        "machine": describe_machine(("torch", "transformers")),
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps({k: v for k, v in report.items() if k != "machine"}, indent=2))
    if not same:
        sys.exit("batched generation returned other tactics than one state per call")


if __name__ == "__main__":
    main()
