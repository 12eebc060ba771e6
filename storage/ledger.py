"""The catalog's `run_provenance` table and the `ledger` view: what every metric row was
computed by, one query away (docs/evaluation.md).

- `run_provenance`: per run, Dojoflow's version and git commit, the environment (Python,
  the versions of the packages that decide results, host), the verifier rule version,
  the GPU (if any), and the process CPU seconds the run cost.
- `ledger` (a view): each metric row, with its interval, its run's flow, status, config and
  wall seconds, its checkpoint's snapshot, parent, settings as used and training figures,
  and its run's provenance; `theorem_ledger`: the same for each `theorem_results` row.

    dojoflow sql "SELECT metric, value, count, snapshot_id, parent_id, git_commit FROM ledger WHERE run_id = 'RUN'"
"""

from __future__ import annotations

import json

from . import catalog

# What every row is computed by, beside the row: its checkpoint (snapshot, parent, the trainer
# settings as used, its training figures), its run (flow, status, config, wall seconds) and the
# run's provenance (code version, dirty tree, verifier rule, environment, CPU seconds, GPU).
_BEHIND = """c.snapshot_id, c.parent_id, c.config_hash, c.resolved_settings, c.train_figures,
           r.flow, r.status, r.config, epoch(r.finished_at - r.started_at) AS wall_seconds,
           p.dojoflow_version, p.git_commit, p.git_dirty, p.verifier_rule_version, p.environment,
           p.cpu_seconds, p.gpu"""
_JOINS = """LEFT JOIN checkpoints c USING (checkpoint_id) LEFT JOIN runs r USING (run_id)
         LEFT JOIN run_provenance p USING (run_id)"""
LEDGER_VIEW = f"""
    CREATE OR REPLACE VIEW ledger AS
    SELECT m.run_id, m.step, m.step_repo_id, m.repo_id, m.trainer, m.split_kind, m.split, m.metric, m.value,
           m.count, m.ci_low, m.ci_high, m.interval, m.checkpoint_id, m.benchmark, {_BEHIND}
    FROM metrics m {_JOINS}"""
# The same for every theorem tried or not (theorem_results); its proofs are in `proofs`
# (joined on run_id, checkpoint_id, theorem_id).
THEOREM_LEDGER_VIEW = f"""
    CREATE OR REPLACE VIEW theorem_ledger AS
    SELECT t.run_id, t.step, t.checkpoint_id, t.repo_id, t.theorem_id, t.file_path, t.full_name, t.split_kind,
           t.split, t.prover, t.checker, t.generator, t.status, t.reason, t.n, t.c, t.k, t.pass_at_1, t.pass_at_k,
           t.errors, t.expansions, t.seconds, t.tokens, t.gpu_seconds, t.benchmark, t.via, {_BEHIND}
    FROM theorem_results t {_JOINS}"""


def record_start(store, run_id: str, provenance: dict) -> None:
    """Write a run's provenance at its start (`environment` as a dict)."""
    with catalog.connect(store, write=True) as con:
        con.execute(catalog.RECORD_TABLES["run_provenance"])  # a store from before this table gains it here
        catalog.add_columns(con)  # and the metrics columns the view reads
        con.execute(LEDGER_VIEW)
        con.execute(THEOREM_LEDGER_VIEW)
        con.execute(
            "INSERT OR REPLACE INTO run_provenance (run_id, dojoflow_version, git_commit, git_dirty, environment,"
            " verifier_rule_version, cpu_seconds_at_start, gpu) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                run_id,
                provenance["dojoflow_version"],
                provenance["git_commit"],
                provenance.get("git_dirty"),
                json.dumps(provenance["environment"], sort_keys=True),
                provenance["verifier_rule_version"],
                provenance["cpu_seconds_at_start"],
                provenance["gpu"],
            ],
        )


def record_end(store, run_id: str, cpu_seconds_now: float, pid: int) -> None:
    """The CPU seconds the run cost: the process's CPU time now minus at the start, only when
    `pid` is the run's own process (a run cancelled from another process leaves it unknown)."""
    with catalog.connect(store, write=True) as con:
        con.execute(catalog.RECORD_TABLES["run_provenance"])
        con.execute(
            "UPDATE run_provenance SET cpu_seconds = round(? - cpu_seconds_at_start, 2)"
            " WHERE run_id = ? AND EXISTS (SELECT 1 FROM runs WHERE run_id = ? AND pid = ?)",
            [cpu_seconds_now, run_id, run_id, pid],
        )


def read(store, run_id: str) -> dict | None:
    """A run's provenance row (`environment` decoded), or None when it was not recorded."""
    with catalog.reading(store):
        if not catalog.has_table(store, "run_provenance"):
            return None
        rows = catalog.query(store, "SELECT * FROM run_provenance WHERE run_id = $run", params={"run": run_id})
    rows = rows.to_pylist()
    if not rows:
        return None
    return {**rows[0], "environment": json.loads(rows[0]["environment"] or "{}")}
