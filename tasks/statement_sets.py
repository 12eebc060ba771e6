"""The pipeline's `statements:` section: statement sets imported into the store when a run starts
(storage/statement_sets/, docs/statement-sets.md). A set marked `benchmark: true` is also a benchmark
of the repositories' snapshots: its fingerprint joins the snapshot settings' `benchmarks`, so a
repository theorem stating one of its statements (or a near-copy) never trains.

    statements:
      - path: examples/statements/minif2f-mini.jsonl
        benchmark: true
      - path: storage/sample/statements/tiny-pset.jsonl
"""

from __future__ import annotations

from storage.statement_sets import set_meta
from storage.statement_sets.reader import StatementSetConfig, import_set


def import_statement_sets(store, configs: list[StatementSetConfig], snapshot_settings, split_settings=None):
    """(snapshot settings naming the benchmark sets' fingerprints, a summary row per set). The file
    named in the config is the truth: other content under a stored name replaces it."""
    rows = [import_set(store, c, replace=True, split_settings=split_settings) for c in configs]
    fps = [set_meta(store, r["set"])["benchmark_fingerprint"] for r in rows if r["benchmark"]]
    if fps:
        merged = tuple(dict.fromkeys((*snapshot_settings.benchmarks, *fps)))
        snapshot_settings = snapshot_settings.model_copy(update={"benchmarks": merged})
    return snapshot_settings, rows
