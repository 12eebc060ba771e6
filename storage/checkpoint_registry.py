"""The catalog's `checkpoints` table: every published checkpoint, where it lies and
what it came from (the folder's manifest is the source of truth; this is its index)."""

from __future__ import annotations

import json

from . import catalog


def register(
    store,
    checkpoint_id: str,
    trainer: str,
    snapshot_id: str,
    parent_id: str | None,
    settings_hash: str,
    path: str,
    figures: dict,
    resolved_settings: dict | None = None,
) -> None:
    """Index a published checkpoint; `resolved_settings`: its trainer settings as used (JSON)."""
    with catalog.connect(store, write=True) as con:
        catalog.add_columns(con)  # a catalog from before `resolved_settings` gains it here
        con.execute(
            "INSERT OR REPLACE INTO checkpoints (checkpoint_id, trainer, snapshot_id, parent_id, config_hash, path,"
            " train_figures, resolved_settings) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                checkpoint_id,
                trainer,
                snapshot_id,
                parent_id,
                settings_hash,
                path,
                json.dumps(figures),
                None if resolved_settings is None else json.dumps(resolved_settings, sort_keys=True),
            ],
        )


def unregister(store, checkpoint_id: str) -> None:
    with catalog.connect(store, write=True) as con:
        con.execute("DELETE FROM checkpoints WHERE checkpoint_id = ?", [checkpoint_id])


def latest_of_runs(store) -> dict[str, dict[str, str]]:
    """Per run, per trainer: the path of the checkpoint of the run's last evaluated step."""
    rows = catalog.query(
        store,
        """
        SELECT m.run_id, m.trainer, arg_max(coalesce(c.path, m.checkpoint_id), m.step) AS path
        FROM metrics m LEFT JOIN checkpoints c USING (checkpoint_id)
        GROUP BY m.run_id, m.trainer ORDER BY m.run_id, m.trainer""",
    ).to_pylist()
    out: dict[str, dict[str, str]] = {}
    for r in rows:
        out.setdefault(r["run_id"], {})[r["trainer"]] = r["path"]
    return out


def newest_trained_on(store, trainer: str, snapshot_prefix: str) -> str | None:
    """The id of `trainer`'s newest registered checkpoint whose snapshot id starts with
    `snapshot_prefix` (expert iteration's round snapshots: `mix-`), or None."""
    rows = catalog.query(
        store,
        """SELECT checkpoint_id FROM checkpoints WHERE trainer = $trainer AND starts_with(snapshot_id, $prefix)
           ORDER BY created_at DESC, checkpoint_id LIMIT 1""",
        params={"trainer": trainer, "prefix": snapshot_prefix},
    ).to_pylist()
    return rows[0]["checkpoint_id"] if rows else None
