"""Expert iteration on the sample against the Lean REPL double at a fixed tactic latency: the time
of each round split into search, verification, data building and training, and the train theorems
proved so far after each of three rounds.

What runs is the project's own code without Prefect (the plain functions the round's tasks wrap,
tasks/expert/steps.py, and the trainer's `train_step`): the step's SFT checkpoint (tiny model,
NatBasics) searches the train split with the `repl` backend (LeanInteract launching
tests/doubles/lean_process/repl_main.py through a fake `lake`; no Lean, so every verdict is the
double's), the verified proofs are stored, the round's snapshot is built and SFT trains from the
previous checkpoint. `verification` is the time inside the verifier's whole-proof checks (the
backend wrapped by `open_verifier`), `search` the rest of the search (generation, tactic steps).
Each share is a ratio of the round's total in the same run; figures are medians of `--repeats`.

    PYTHONPATH=$PWD HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/bench_expert_iteration.py
    PYTHONPATH=$PWD HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/bench_expert_iteration.py --rounds 2 --repeats 1
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


class TimedVerifier:
    """A backend whose whole-proof checks are timed (the rest passes through)."""

    def __init__(self, backend, clock: dict):
        self.backend, self.clock = backend, clock

    def __getattr__(self, attr):
        return getattr(self.backend, attr)

    def _timed(self, fn, *args):
        started = time.perf_counter()
        try:
            return fn(*args)
        finally:
            self.clock["verification"] += time.perf_counter() - started

    def check_proof(self, theorem, proof):
        return self._timed(self.backend.check_proof, theorem, proof)

    def check_proofs(self, items):
        return self._timed(self.backend.check_proofs, items)


def one_run(tmp: Path, args) -> list[dict]:
    import tasks.lean.verified as verified
    from storage.snapshot import SnapshotSettings, build_snapshot
    from tasks import checkpoints
    from tasks.expert import steps
    from tasks.expert.config import ExpertIterationSettings
    from tasks.expert.pool import PoolRequest
    from tasks.proving.config import ProvingSettings
    from tasks.sft.config import SFTSettings
    from tests.doubles.lean_process import make_repl_double
    from tests.doubles.sample_store import sample_store

    home = tmp / "home"
    store = sample_store(home)
    repos = [r["repo_id"] for r in store.repositories() if r["name"] == "NatBasics"]
    snapshot = build_snapshot(store, repos, SnapshotSettings())
    double = make_repl_double(tmp / "double", tactic_delay_ms=args.tactic_ms)
    backend = {"kind": "repl", "repl": double.options(), "work_dir": str(tmp / "work"), "sandbox": double.sandbox()}
    search = ProvingSettings(
        backend=backend, generator={"decoding": "sample", "max_new_tokens": 12},
        num_tactics=4, max_expansions=2, timeout_s=300, attempts=1, batch_size=args.batch,
    )  # fmt: skip
    ei = ExpertIterationSettings(rounds=args.rounds, search=search, training={"max_steps": args.round_steps})
    training = {"max_steps": args.step_steps, "per_device_train_batch_size": 8, "learning_rate": 3e-3}
    settings = SFTSettings(training=training)
    current = checkpoints.train_step(home, store, "sft", settings, snapshot, "random")
    round_settings = SFTSettings(training={**training, "max_steps": args.round_steps})
    clock = {"verification": 0.0}
    opened = verified.open_verifier
    verified.open_verifier = lambda s, st: TimedVerifier(opened(s, st), clock)
    out = []
    try:
        for r in range(1, args.rounds + 1):
            clock["verification"] = 0.0
            t0 = time.perf_counter()
            asked = PoolRequest(repo_ids=repos, split_kind="random", settings=ei, search=search, step=1, round=r)
            pool = steps.select(store, asked).theorems
            records = []
            for i in range(0, len(pool), args.batch):
                records += steps.search(store, search, current, pool[i : i + args.batch], str(home))
            t1 = time.perf_counter()
            steps.store_found(store, records, search, "bench", 1, r, current.checkpoint_id)
            data, counts = steps.training_data(store, snapshot, "random", ei.found_to_traced, repos, 1, r)
            t2 = time.perf_counter()
            if any(x.proof for x in records):
                from storage.snapshot_ref import SnapshotRef

                starts = checkpoints.StartingPoints(previous={"sft": current})
                current = checkpoints.train_step(
                    home, store, "sft", round_settings, SnapshotRef.from_dict(data), "random", starts
                )
            t3 = time.perf_counter()
            out.append(
                {
                    "round": r,
                    "attempted": len(records),
                    "newly_proved": sum(1 for x in records if x.proof),
                    "proved_so_far": counts["proved_so_far"],
                    "search_s": t1 - t0 - clock["verification"],
                    "verification_s": clock["verification"],
                    "data_s": t2 - t1,
                    "training_s": t3 - t2,
                    "total_s": t3 - t0,
                }
            )
    finally:
        verified.open_verifier = opened
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--tactic-ms", type=float, default=20.0, help="the double's latency per tactic")
    ap.add_argument("--batch", type=int, default=24, help="theorems per search batch")
    ap.add_argument("--step-steps", type=int, default=60, help="SFT steps of the step's own training")
    ap.add_argument("--round-steps", type=int, default=20, help="SFT steps of each round's training")
    args = ap.parse_args()
    runs = []
    for _ in range(args.repeats):
        with tempfile.TemporaryDirectory() as tmp:
            runs.append(one_run(Path(tmp), args))
    rounds = []
    for i in range(args.rounds):
        rows = [run[i] for run in runs if len(run) > i]
        med = {k: statistics.median(r[k] for r in rows) for k in rows[0] if k != "round"}
        med["shares"] = {
            k: round(med[f"{k}_s"] / med["total_s"], 3) for k in ("search", "verification", "data", "training")
        }
        rounds.append({"round": i + 1, **{k: (round(v, 3) if isinstance(v, float) else v) for k, v in med.items()}})
    print(json.dumps({"machine": describe_machine(), "settings": vars(args), "rounds": rounds}, indent=2))


if __name__ == "__main__":
    main()
