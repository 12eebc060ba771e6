"""The catalog's `metrics` table: one row per (run, checkpoint, repository, split kind,
split, metric), so a run can be read whole after later runs (docs/runs.md). `count` is
how many items (theorems, examples) an aggregate is over; `ci_low`/`ci_high` its 95%
interval where one is computed, and `interval` how (docs/evaluation.md)."""

from __future__ import annotations

from . import catalog

# What a metric means travels with its row, as declared where it is computed
# (tasks/metric_registry.py): the forgetting views and every reader take it from these columns,
# never from the metric's name. NULL in rows recorded before the columns existed.
MEANING_COLUMNS = ("direction", "kind", "unit", "question", "baseline_metric")


COLUMNS = (
    "run_id, step, step_repo_id, repo_id, trainer, split_kind, split, metric, value, count, checkpoint_id,"
    f" ci_low, ci_high, interval, benchmark, {', '.join(MEANING_COLUMNS)}"
)
ROWS_PER_INSERT = 500  # one statement per this many rows (DuckDB's executemany runs one per row: ~8 ms each)


def record(store, rows: list[dict], run_id: str, step: int, step_repo_id: str) -> int:
    """Write metric rows; a re-evaluated checkpoint replaces its earlier rows."""
    if not rows:
        return 0
    # the last row of a key wins, as inserting them one at a time would (one INSERT OR REPLACE
    # may not write a key twice); the key: the table's primary key
    values = [_values(r, run_id, step, step_repo_id) for r in rows]
    with catalog.connect(store, write=True) as con:
        catalog.add_columns(con)  # a store from before the interval columns gains them here
        catalog.create_views_over_records(store, con)  # and the views over this table (storage/forgetting.py)
        catalog.insert_or_replace(con, "metrics", COLUMNS.split(", "), values, (0, 10, 3, 5, 6, 7), ROWS_PER_INSERT)
    return len(rows)


def _values(r: dict, run_id: str, step: int, step_repo_id: str) -> list:
    """One metric row's values, in the order of COLUMNS."""
    return [
        run_id,
        step,
        step_repo_id,
        r["repo_id"],
        r["trainer"],
        r["split_kind"],
        r["split"],
        r["metric"],
        float(r["value"]),
        int(r.get("count", 0)),
        r["checkpoint_id"],
        r.get("ci_low"),
        r.get("ci_high"),
        r.get("interval"),
        r.get("benchmark"),  # the fingerprint of the benchmark it is computed on, if any
        *(r.get(c) for c in MEANING_COLUMNS),
    ]


def of_run(
    store, run_id: str, trainer: str | None = None, split: str | None = None, repository: str | None = None
) -> list[dict]:
    """A run's metric rows (optionally one trainer, split or repository name), with the
    repository's name, ordered by trainer, step, repository, split and metric."""
    with catalog.reading(store):  # its checks of the columns and the query: one connection
        return _of_run(store, run_id, trainer, split, repository)


def _of_run(store, run_id: str, trainer: str | None, split: str | None, repository: str | None) -> list[dict]:
    has = _columns(store)
    intervals = "m.ci_low, m.ci_high, m.interval" if "ci_low" in has else _NO_INTERVALS
    intervals += ", m.benchmark" if "benchmark" in has else ", NULL::VARCHAR AS benchmark"
    has_meaning = "baseline_metric" in has
    intervals += "".join(f", {'m.' if has_meaning else 'NULL::VARCHAR AS '}{c}" for c in MEANING_COLUMNS)
    return catalog.query(
        store,
        f"""
        SELECT m.step, m.step_repo_id, coalesce(r.name, m.repo_id) AS repository, m.repo_id, m.trainer,
               m.split_kind, m.split, m.metric, m.value, m.count, m.checkpoint_id, {intervals}
        FROM metrics m LEFT JOIN repositories r USING (repo_id)
        WHERE m.run_id = $run AND ($trainer IS NULL OR m.trainer = $trainer) AND ($split IS NULL OR m.split = $split)
              AND ($repo IS NULL OR coalesce(r.name, m.repo_id) = $repo OR m.repo_id = $repo)
        ORDER BY m.trainer, m.step, repository, m.split, m.metric""",
        params={"run": run_id, "trainer": trainer, "split": split, "repo": repository},
    ).to_pylist()


_NO_INTERVALS = "NULL::DOUBLE AS ci_low, NULL::DOUBLE AS ci_high, NULL::VARCHAR AS interval"


def _columns(store) -> set[str]:
    """The columns the catalog's metrics table has (a store whose last metrics were written
    before the interval, benchmark or meaning columns existed has not, until its next write adds them)."""
    rows = catalog.query(store, "SELECT column_name FROM duckdb_columns() WHERE table_name = 'metrics'").to_pylist()
    return {r["column_name"] for r in rows}


def choices(store, run_id: str) -> dict[str, list[str]]:
    """The trainers, splits and repository names a run has metrics for."""
    rows = catalog.query(
        store,
        """
        SELECT list(DISTINCT m.trainer ORDER BY m.trainer) AS trainer, list(DISTINCT m.split ORDER BY m.split) AS split,
               list(DISTINCT coalesce(r.name, m.repo_id) ORDER BY coalesce(r.name, m.repo_id)) AS repository
        FROM metrics m LEFT JOIN repositories r USING (repo_id) WHERE m.run_id = $run""",
        params={"run": run_id},
    ).to_pylist()[0]
    return {k: v or [] for k, v in rows.items()}


def newest_run(store) -> str | None:
    """The newest run that recorded metrics."""
    rows = catalog.query(
        store,
        """
        SELECT m.run_id FROM metrics m LEFT JOIN runs r USING (run_id)
        GROUP BY m.run_id ORDER BY max(coalesce(r.started_at, m.recorded_at)) DESC LIMIT 1""",
    ).to_pylist()
    return rows[0]["run_id"] if rows else None
