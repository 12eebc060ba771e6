"""Replay pass@1 and pass@8 of the sample's SFT checkpoint: what the tiny model proves when
`replay` (the store's traced transitions, no Lean: a lower bound of what Lean accepts)
decides. These are replay figures, never Lean's.

The checkpoint is trained by the project's own SFT trainer on a snapshot of the whole
sample (`--steps` optimizer steps, cached in `--home`); then `tasks.proving.evaluate`
searches (best-first, 8 tactics per state, 8 expansions) every theorem of the train and
test splits with a traced tactic proof and no `sorry`, `--attempts` times with sampled
tactics (attempt i seeded with i), and pass@1 and pass@8 are the unbiased estimator over
those attempts, per split (all repositories together) and per repository.

    PYTHONPATH=$PWD HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/bench_proving_replay.py
    PYTHONPATH=$PWD HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/bench_proving_replay.py --steps 200 --max-theorems 8
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.machine import describe_machine  # noqa: E402


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--home", default="/tmp/dojoflow-bench-replay")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--attempts", type=int, default=8)
    ap.add_argument("--max-theorems", type=int, default=None, help="per repository and split (default: all)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "proving-replay.json"))
    args = ap.parse_args(argv)

    from storage.snapshot import build_snapshot
    from storage.store import Store
    from tasks import checkpoints
    from tasks.proving.config import ProvingSettings
    from tasks.proving.evaluate import prove_theorems, proving_metrics, select_theorems
    from tasks.search import pass_at_k_mean
    from tasks.sft.config import SFTSettings
    from tests.doubles.sample_store import sample_store

    home = Path(args.home)
    store = Store.open(home) if (home / "store" / "FORMAT_VERSION.json").exists() else sample_store(home)
    snapshot = build_snapshot(store, store.repo_ids())
    sft = SFTSettings.model_validate(
        {
            "training": {
                "max_steps": args.steps,
                "per_device_train_batch_size": 8,
                "learning_rate": 3e-3,
                "logging_steps": 50,
                "save_steps": 100,
            }
        }
    )
    started = time.perf_counter()
    checkpoint = checkpoints.train_step(home, store, "sft", sft, snapshot, "random", None)
    train_seconds = time.perf_counter() - started
    settings = ProvingSettings.model_validate(
        {
            "backend": {"kind": "replay"},
            "generator": {"decoding": "sample", "max_new_tokens": 24, "batch_size": 16},
            "num_tactics": 8,
            "max_expansions": 8,
            "timeout_s": 600,
            "attempts": args.attempts,
            "k": 8,
            "splits": ["train", "test"],
            "max_theorems": args.max_theorems,
        }
    )
    theorems = select_theorems(store, store.repo_ids(), "random", settings).theorems
    started = time.perf_counter()
    records = prove_theorems(store, settings, checkpoint.path, theorems, home / "models")
    search_seconds = time.perf_counter() - started
    names = {r["repo_id"]: r["name"] for r in store.repositories()}
    per_split = {}
    for split in ("train", "test"):
        recs = [r for r in records if r.split == split and not r.errors]
        counts = [(r.n, r.c) for r in recs]
        per_split[split] = {
            "theorems": len(recs),
            "replay_pass@1": round(pass_at_k_mean(counts, 1), 4),
            "replay_pass@8": round(pass_at_k_mean(counts, 8), 4),
        }
    per_repo = [
        {**m, "repository": names[m["repo_id"]]}
        for m in proving_metrics(records, settings)
        if m["metric"].startswith("replay_pass")
    ]
    result = {
        "benchmark": "replay pass@1 and pass@8 of the sample's SFT checkpoint (replay figures, not Lean's)",
        "sft_steps": args.steps,
        "train_seconds": round(train_seconds, 1),
        "search_seconds": round(search_seconds, 1),
        "attempts": args.attempts,
        "per_split": per_split,
        "per_repository": per_repo,
        "errors": sum(r.errors > 0 for r in records),
        "machine": describe_machine(("torch", "transformers", "trl")),
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    for split, f in per_split.items():
        print(
            f"{split}: replay_pass@1 {f['replay_pass@1']:.3f}, replay_pass@8 {f['replay_pass@8']:.3f} "
            f"over {f['theorems']} theorems"
        )
    return result


if __name__ == "__main__":
    main()
