"""The SQL console's views over statement sets (`dojoflow sql`):

- `statement_sets`: one row per set (name, content hash, Lean and Mathlib version, benchmark,
  publish_proofs, rows, where it was read from and with which preset).
- `statements`: one row per statement of a set: `set`, `split`, `name`, `statement_id`,
  `fingerprint`, `lean_version`, `mathlib_version`, `has_claimed_proof`, `verified_proof`
  (whether a verdict accepted a proof of it: a row of `statement_proofs`).

    dojoflow sql "SELECT \\"set\\", split, count(*), sum(verified_proof::INT) FROM statements GROUP BY ALL"
"""

from __future__ import annotations

from ..catalog import Views
from .sets import read_index, set_folders

_EMPTY_SETS = """CREATE OR REPLACE {kind}VIEW statement_sets AS SELECT NULL::VARCHAR AS name,
    NULL::VARCHAR AS content_hash, NULL::VARCHAR AS lean_version, NULL::VARCHAR AS mathlib_version,
    NULL::BOOLEAN AS benchmark, NULL::BOOLEAN AS publish_proofs, NULL::BIGINT AS rows, NULL::VARCHAR AS source_path,
    NULL::VARCHAR AS preset WHERE false"""
_EMPTY_STATEMENTS = """CREATE OR REPLACE {kind}VIEW statements AS SELECT NULL::VARCHAR AS "set",
    NULL::VARCHAR AS split, NULL::VARCHAR AS name, NULL::VARCHAR AS statement_id, NULL::VARCHAR AS fingerprint,
    NULL::VARCHAR AS lean_version, NULL::VARCHAR AS mathlib_version, NULL::BOOLEAN AS has_claimed_proof,
    NULL::BOOLEAN AS verified_proof WHERE false"""


def _listing(paths) -> str:
    return ", ".join("'" + str(p).replace("'", "''") + "'" for p in paths)


def create_views(store, con, kind: str = "") -> None:
    """(Re)create `statement_sets` and `statements` over the sets STATEMENT_SETS.json lists."""
    folders = set_folders(store)
    if not folders:
        con.execute(_EMPTY_SETS.format(kind=kind))
        con.execute(_EMPTY_STATEMENTS.format(kind=kind))
        return
    metas = _listing(f / "set.json" for f in folders.values())
    con.execute(f"""CREATE OR REPLACE {kind}VIEW statement_sets AS
        SELECT name::VARCHAR AS name, content_hash::VARCHAR AS content_hash, lean_version::VARCHAR AS lean_version,
               mathlib_version::VARCHAR AS mathlib_version, benchmark::BOOLEAN AS benchmark,
               publish_proofs::BOOLEAN AS publish_proofs, "rows"::BIGINT AS "rows", source_path::VARCHAR AS source_path,
               preset::VARCHAR AS preset
        FROM read_json([{metas}], union_by_name = true)""")
    has_proofs = con.sql(
        "SELECT count(*) FROM duckdb_tables() WHERE table_name = 'statement_proofs' AND NOT temporary"
    ).fetchall()[0][0]
    verified = (
        "EXISTS (SELECT 1 FROM statement_proofs p WHERE p.statement_id = s.statement_id)" if has_proofs else "false"
    )
    parquet = _listing(f / "statements.parquet" for f in folders.values())
    con.execute(f"""CREATE OR REPLACE {kind}VIEW statements AS
        SELECT s.set_name AS "set", s.split, s.name, s.statement_id, s.fingerprint, s.lean_version,
               s.mathlib_version, s.claimed_proof IS NOT NULL AS has_claimed_proof, {verified} AS verified_proof
        FROM read_parquet([{parquet}]) s""")


def views_key(store) -> list | None:
    """What the views depend on: the sets listed (None while there is none)."""
    sets = read_index(store)["sets"]
    return sorted(sets.items()) if sets else None


CATALOG_VIEWS = Views(create=create_views, key=views_key)
