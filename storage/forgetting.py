"""The catalog's `forgetting` view: for every run, trainer, repository, split and metric,
the value at the step that repository was learned (the step that trained on it), the best
value since, the latest, and how much was forgotten, so continual learning is measured
for every trainer, not only the retriever (docs/evaluation.md).

- `forgetting` (per repository): `value_when_learned`, `best`, `latest`; `forgetting` =
  best before the last step minus latest (Chaudhry et al. 2018, "Riemannian Walk",
  arXiv 1801.10112, eq. 5), `backward_transfer` = latest minus value when learned
  (Lopez-Paz & Ranzato 2017, "Gradient Episodic Memory", arXiv 1706.08840, eq. 3).
  Both in the metric's units, signed so that forgetting > 0 is worse and backward
  transfer > 0 is better, also for metrics where lower is better (losses, MAE, MSE): each
  metric's direction is declared once, where it is computed (tasks/metric_registry.py), and
  travels with its row (the `direction` and `kind` columns). Only skills (`kind = 'score'`)
  count: counts, costs (seconds, expansions), diagnostics and baselines are left out, and
  so are rows recorded before the meaning columns existed (a cached rerun records them again).
- `forgetting_summary`: average forgetting and backward transfer over the repositories
  learned before the run's last step (the last one has had no chance to be forgotten).

    dojoflow sql "SELECT trainer, metric, average_forgetting, backward_transfer FROM forgetting_summary"
"""

from __future__ import annotations

from . import catalog
from .catalog import Views

VIEWS = {
    "forgetting": """
        CREATE OR REPLACE VIEW forgetting AS
        WITH m AS (
            SELECT * FROM (
                SELECT run_id, trainer, repo_id, split_kind, split, metric, step, step_repo_id, value,
                       CASE direction WHEN 'lower' THEN -1 WHEN 'higher' THEN 1 END AS sign
                FROM metrics WHERE value IS NOT NULL AND kind = 'score')
            WHERE sign IS NOT NULL),
        learned AS (
            SELECT run_id, trainer, repo_id, split_kind, split, metric, min(step) AS learned_step
            FROM m WHERE step_repo_id = repo_id GROUP BY ALL),
        last AS (SELECT run_id, trainer, max(step) AS last_step FROM m GROUP BY ALL),
        per AS (
            SELECT m.run_id, m.trainer, m.repo_id, m.split_kind, m.split, m.metric, any_value(m.sign) AS sign,
                   l.learned_step, any_value(t.last_step) AS last_step, max(m.step) AS latest_step,
                   max(m.value) FILTER (WHERE m.step = l.learned_step) AS value_when_learned,
                   any_value(m.sign) * max(m.sign * m.value) FILTER (WHERE m.step >= l.learned_step) AS best,
                   arg_max(m.value, m.step) AS latest,
                   max(m.sign * m.value) FILTER (WHERE m.step >= l.learned_step AND m.step < t.last_step) AS best_before
            FROM m JOIN learned l USING (run_id, trainer, repo_id, split_kind, split, metric)
                   JOIN last t USING (run_id, trainer)
            GROUP BY m.run_id, m.trainer, m.repo_id, m.split_kind, m.split, m.metric, l.learned_step)
        SELECT run_id, trainer, repo_id, split_kind, split, metric, learned_step, last_step, latest_step,
               value_when_learned, best, latest,
               CASE WHEN learned_step < last_step THEN best_before - sign * latest END AS forgetting,
               CASE WHEN learned_step < last_step THEN sign * (latest - value_when_learned) END AS backward_transfer
        FROM per""",
    "forgetting_summary": """
        CREATE OR REPLACE VIEW forgetting_summary AS
        SELECT run_id, trainer, split_kind, split, metric, avg(forgetting) AS average_forgetting,
               avg(backward_transfer) AS backward_transfer, count(*) AS repositories
        FROM forgetting WHERE learned_step < last_step GROUP BY ALL""",
}


def create_views(store, con, kind: str = "") -> None:
    """(Re)create the views on a writable connection whose catalog has the metrics table
    (views over a record table live in the catalog file: `kind` is always "")."""
    catalog.add_columns(con)  # the declared-meaning columns the views read
    for ddl in VIEWS.values():
        con.execute(ddl)


CATALOG_VIEWS = Views(create=create_views, over_records=True)


def of_run(store, run_id: str) -> tuple[list[dict], list[dict]]:
    """(per-repository rows, summary rows) of a run, with repository names."""
    with catalog.connect(store) as con:
        if not con.sql("SELECT 1 FROM duckdb_views() WHERE view_name = 'forgetting_summary'").fetchall():
            return [], []
        per = con.sql(
            """SELECT f.*, coalesce(r.name, f.repo_id) AS repo FROM forgetting f LEFT JOIN repositories r USING (repo_id)
               WHERE f.run_id = $run ORDER BY f.trainer, f.metric, f.split, f.learned_step""",
            params={"run": run_id},
        ).to_arrow_table()
        summary = con.sql(
            "SELECT * FROM forgetting_summary WHERE run_id = $run ORDER BY trainer, metric, split",
            params={"run": run_id},
        ).to_arrow_table()
    return per.to_pylist(), summary.to_pylist()
