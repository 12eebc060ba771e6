"""The catalog's `theorem_results` table: one row per theorem a proving evaluation tried
(or could not try), per run, checkpoint, split kind and prover (`model` or the
closing-tactics `baseline`): its attempts n, successes c, pass@1 and pass@k, errors,
time, and for a theorem not tried or not started, the reason.

Aggregates in `metrics` are computed from these rows, so an interval, a sub-population or
a paired comparison of two checkpoints is one query away (docs/evaluation.md):

    dojoflow sql "SELECT prover, avg(pass_at_1), count(*) FROM theorem_results WHERE status <> 'untried' GROUP BY prover"
"""

from __future__ import annotations

from . import catalog

COLUMNS = (
    "run_id",
    "step",
    "checkpoint_id",
    "repo_id",
    "theorem_id",
    "file_path",
    "full_name",
    "split_kind",
    "split",
    "prover",
    "checker",
    "generator",
    "status",
    "reason",
    "n",
    "c",
    "k",
    "pass_at_1",
    "pass_at_k",
    "errors",
    "expansions",
    "seconds",
    "benchmark",  # the fingerprint of the benchmark the theorem is from (tasks/proving/benchmarks.py), else NULL
    "via",  # for a benchmark statement tried through a store theorem of the same statement: repo_id:full_name
    "tokens",  # the theorem's share of the tokens its batch generated (NULL: a generator that is no model)
    "gpu_seconds",  # its search's GPU seconds (NULL: no GPU did the work)
)

KEY = tuple(COLUMNS.index(c) for c in ("run_id", "checkpoint_id", "theorem_id", "split_kind", "prover"))  # primary key


def record_results(store, rows: list[dict], run_id: str, step: int, checkpoint_id: str, split_kind: str) -> int:
    """Write per-theorem rows (dicts with COLUMNS but the four given here); one transaction."""
    if not rows:
        return 0
    given = {"run_id": run_id, "step": step, "checkpoint_id": checkpoint_id, "split_kind": split_kind}
    values = [[given[c] if c in given else r.get(c) for c in COLUMNS] for r in rows]
    with catalog.connect(store, write=True) as con:
        con.execute(catalog.RECORD_TABLES["theorem_results"])  # a store from before this table gains it here
        catalog.add_columns(con)  # and a table from before the benchmark columns gains them
        con.execute("BEGIN TRANSACTION")
        catalog.insert_or_replace(con, "theorem_results", COLUMNS, values, KEY)
        con.execute("COMMIT")
    return len(values)


def read_results(store, run_id: str, status: str | None = None) -> list[dict]:
    """A run's per-theorem rows (optionally one status), with the repository's name."""
    with catalog.reading(store):
        if not catalog.has_table(store, "theorem_results"):
            return []
        return catalog.query(
            store,
            """
            SELECT t.*, r.name AS repo FROM theorem_results t LEFT JOIN repositories r USING (repo_id)
            WHERE t.run_id = $run AND ($status IS NULL OR t.status = $status)
            ORDER BY t.step, t.prover, t.repo_id, t.split, t.full_name""",
            params={"run": run_id, "status": status},
        ).to_pylist()
