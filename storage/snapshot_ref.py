"""`SnapshotRef`: a handle on a built snapshot, and how trainers read it; and the
catalog's `snapshots` view over the manifests (`CATALOG_VIEWS`).

A snapshot is a manifest listing Parquet parts (one per repository, split kind
and split) plus the theorems excluded by de-duplication. Reading it is a DuckDB
query over those parts, so merging repositories never copies data.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
from pydantic import BaseModel, ConfigDict

from . import atomic, schemas
from .catalog import NO_EXTENSIONS, Views, lock_down
from .ids import stable_hash


class SnapshotRef(BaseModel):
    """The merged data of `repo_ids`, as built by `storage.snapshot.build_snapshot`.

    A pydantic model, so that it is a task result Prefect stores as JSON and reads back
    as a `SnapshotRef`."""

    model_config = ConfigDict(frozen=True)

    snapshot_id: str
    store_root: str
    repo_ids: tuple[str, ...]
    manifest_path: str
    counts: dict = {}

    # -- serialisation (task results are JSON manifests) ---------------------------
    def to_dict(self) -> dict:
        return {**self.model_dump(mode="json"), "repo_ids": list(self.repo_ids)}

    @classmethod
    def from_dict(cls, d: "dict | SnapshotRef") -> "SnapshotRef":
        return d if isinstance(d, cls) else cls.model_validate(d)

    @classmethod
    def of_manifest(cls, store_root, manifest_path: Path, manifest: dict | None = None) -> "SnapshotRef":
        """The snapshot of the manifest at `manifest_path` (`manifest`: its content, if read already)."""
        manifest = json.loads(Path(manifest_path).read_text()) if manifest is None else manifest
        return cls(
            snapshot_id=manifest["snapshot_id"],
            store_root=str(store_root),
            repo_ids=tuple(manifest["repo_ids"]),
            manifest_path=str(manifest_path),
            counts=manifest["counts"],
        )

    # -- reading -------------------------------------------------------------------
    def manifest(self) -> dict:
        return json.loads(Path(self.manifest_path).read_text())

    def _paths(self, rel_paths: list[str]) -> list[str]:
        root = Path(self.store_root)
        return [str(root / p) for p in rel_paths]

    def _read(self, rel_paths: list[str], schema: pa.Schema, repo_ids, exclude: bool) -> pa.Table:
        import duckdb

        paths = self._paths(rel_paths)
        if not paths:
            return schema.empty_table()
        con = duckdb.connect(config=NO_EXTENSIONS)
        try:
            lock_down(con, [self.store_root])
            q = "SELECT * FROM read_parquet($paths, union_by_name=true) t WHERE true"
            params: dict = {"paths": paths}
            if repo_ids is not None:
                q += " AND t.repo_id IN (SELECT unnest($repos))"
                params["repos"] = list(repo_ids)
            excluded = self.manifest().get("excluded")
            if exclude and excluded:
                q += (
                    " AND NOT EXISTS (SELECT 1 FROM read_parquet($ex) e"
                    " WHERE e.repo_id = t.repo_id AND e.theorem_id = t.theorem_id)"
                )
                params["ex"] = str(Path(self.store_root) / excluded)
            order = [c for c in ("repo_id", "file_path", "path", "full_name", "idx") if c in schema.names]
            q += " ORDER BY " + ", ".join(order)
            table = con.sql(q, params=params).to_arrow_table()
        finally:
            con.close()
        return table.select(schema.names).cast(schema)

    def tactics(self, split_kind: str, split: str, repo_ids=None) -> pa.Table:
        """Training rows of one split (schema `SNAPSHOT_TACTICS`), sorry and no-goals dropped."""
        files = self.manifest()["parts"][split_kind][split]["tactics"]
        return self._read(files, schemas.SNAPSHOT_TACTICS, repo_ids, exclude=True)

    def theorems(self, split_kind: str, split: str, repo_ids=None) -> pa.Table:
        """Theorem records of one split (schema `THEOREMS`), de-duplicated."""
        files = self.manifest()["parts"][split_kind][split]["theorems"]
        return self._read(files, schemas.THEOREMS, repo_ids, exclude=True)

    def premises(self, repo_ids=None) -> pa.Table:
        """The premise corpus of the snapshot's repositories (schema `PREMISES`)."""
        return self._read(self.manifest()["corpus"]["premises"], schemas.PREMISES, repo_ids, exclude=False)

    def files(self, repo_ids=None) -> pa.Table:
        """Files and their imports (schema `FILES`), to compute accessible premises."""
        return self._read(self.manifest()["corpus"]["files"], schemas.FILES, repo_ids, exclude=False)


def with_extra_train_file(store, base: SnapshotRef, split_kind: str, table: pa.Table, *, prefix: str, file: str,
                          part_key: str, about_key: str, about: dict, counted: bool = False) -> SnapshotRef:  # fmt: skip
    """`base` with one Parquet file more (`table`) listed under `parts[split_kind]["train"][part_key]`,
    as `snapshots/<id>/<file>`: a snapshot sharing every other part of its base, whose id (`prefix`
    and a hash of the base id, the split kind and the rows) follows the rows. Its manifest says what
    it derives from and, under `about_key`, `about`; `counted`: the rows add to the split's count
    of `part_key`. Returns at once if it exists."""
    sid = prefix + stable_hash([base.snapshot_id, split_kind, table.to_pylist()], 20)
    manifest_path = Path(store.root) / "snapshots" / sid / "manifest.json"
    if not manifest_path.exists():
        manifest = base.manifest()
        rel = f"snapshots/{sid}/{file}"
        atomic.write_parquet(Path(store.root) / rel, table)
        part = manifest["parts"][split_kind]["train"]
        part[part_key] = [*part.get(part_key, []), rel]
        if counted:
            manifest["counts"][split_kind]["train"][part_key] += table.num_rows
        manifest.update(
            snapshot_id=sid,
            derived_from=base.snapshot_id,
            **{about_key: {"split_kind": split_kind, "rows": table.num_rows, **about}},
            created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        )
        atomic.write_json(manifest_path, manifest)
    return SnapshotRef.of_manifest(store.root, manifest_path)


def has_manifests(store) -> bool:
    """Whether any snapshot manifest exists (stops at the first one found)."""
    try:
        with os.scandir(store.root / "snapshots") as entries:
            return any(e.is_dir() and os.path.exists(os.path.join(e.path, "manifest.json")) for e in entries)
    except FileNotFoundError:
        return False


def create_views(store, con, kind: str = "") -> None:
    """(Re)create `snapshots`, one row per manifest; a placeholder until one exists (the glob
    would find no file), so building a snapshot needs no catalog write but the first."""
    if has_manifests(store):
        glob = str(store.root / "snapshots" / "*" / "manifest.json").replace("'", "''")
        con.execute(f"""CREATE OR REPLACE {kind}VIEW snapshots AS
            SELECT snapshot_id, repo_ids, kept_repo_ids, settings, counts, created_at::TIMESTAMPTZ AS created_at,
                   filename AS manifest_path
            FROM read_json('{glob}', filename = true, union_by_name = true)""")
    else:
        con.execute(f"""CREATE OR REPLACE {kind}VIEW snapshots AS SELECT NULL::VARCHAR AS snapshot_id,
            NULL::VARCHAR[] AS repo_ids, NULL::VARCHAR[] AS kept_repo_ids, NULL::JSON AS settings,
            NULL::JSON AS counts, NULL::TIMESTAMPTZ AS created_at, NULL::VARCHAR AS manifest_path WHERE false""")


CATALOG_VIEWS = Views(create=create_views, key=has_manifests)
