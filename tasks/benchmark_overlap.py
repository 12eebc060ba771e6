"""A benchmark that overlaps much of the training data: one warning line for the terminal.

A benchmark equal to the training data excluded 84 of 89 theorems and the run trained on the
rest with no word on the terminal. A split a benchmark empties is refused when the snapshot
is built (storage/snapshot.py); this names, in one line, the splits of which benchmarks
removed more than `WARN_FRACTION` of the theorems. `flows/curriculum.py` shows the line
after each snapshot (`ui.note`: the terminal and the run's log).

    from tasks.benchmark_overlap import overlap_warning
    line = overlap_warning(snapshot)  # None when no split lost more than half to a benchmark
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq

from storage import schemas
from storage.snapshot_ref import SnapshotRef

WARN_FRACTION = 0.5  # more than this share of a split's theorems removed by benchmarks: warn


def removed_by_benchmarks(snapshot: SnapshotRef) -> list[dict]:
    """Per split kind and split with theorems: `{"split": "random/train", "theorems": n,
    "removed": k, "benchmarks": [...]}`, k of the split's n theorems excluded because a
    benchmark states them (not de-duplication or another repository's copy)."""
    manifest = snapshot.manifest()
    report_rel = manifest.get("contamination")
    if not report_rel:
        return []
    root = Path(snapshot.store_root)
    report = json.loads((root / report_rel).read_text())
    by_benchmark = {(e["repo_id"], e["theorem_id"]): e["benchmark"] for e in report["excluded"] if e["benchmark"]}
    if not by_benchmark:
        return []
    rows = []
    for kind in schemas.SPLIT_KINDS:
        for split in schemas.SPLITS:
            keys = [
                key
                for rel in manifest["parts"][kind][split]["theorems"]
                for key in zip(*pq.read_table(root / rel, columns=["repo_id", "theorem_id"]).to_pydict().values())
            ]
            hits = [by_benchmark[k] for k in keys if k in by_benchmark]
            if keys:
                rows.append(
                    {
                        "split": f"{kind}/{split}",
                        "theorems": len(keys),
                        "removed": len(hits),
                        "benchmarks": sorted(set(hits)),
                    }
                )
    return rows


def overlap_warning(snapshot: SnapshotRef, fraction: float = WARN_FRACTION) -> str | None:
    """One line naming the splits of which benchmarks removed more than `fraction` of the
    theorems, how many, and what to do; None when there is none."""
    over = [r for r in removed_by_benchmarks(snapshot) if r["removed"] > fraction * r["theorems"]]
    if not over:
        return None
    names = sorted({b for r in over for b in r["benchmarks"]})
    splits = ", ".join(f"{r['removed']} of {r['theorems']} theorems of {r['split']}" for r in over)
    return (
        f"warning: benchmarks {', '.join(names)} remove {splits} (more than {fraction:.0%}): training goes on with "
        "the rest; if the benchmark is the training data, give another benchmark or remove it from `benchmarks:`"
    )
