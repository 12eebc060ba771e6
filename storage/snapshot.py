"""`build_snapshot`: the merged data of a set of repositories, without copying it.

For each repository, its training rows are filtered once into per-repository parts
(`parts/<repo_id>-<content>/<settings>/<kind>/<split>/{theorems,tactics}.parquet`),
reused by every later snapshot that includes it. A snapshot is then a manifest
listing parts plus a small table of theorems excluded by de-duplication, so the
cost of step k is building repo k's parts and reading the identity columns of
repos 1..k, never rewriting their data (LeanDojo-v2 rewrites all JSON each step).

Rules (as LeanDojo-v2's export): `sorry` tactics and tactics whose state before
is `no goals` are dropped from training rows; a theorem present in several
repositories is kept once; when one url appears at two commits, the newer wins.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pydantic import BaseModel, ConfigDict, Field

from . import atomic, catalog, schemas
from .errors import InputError
from .ids import stable_hash
from .tactic_text import is_sorry
from .snapshot_ref import SnapshotRef


class SnapshotSettings(BaseModel):
    """What a snapshot keeps. Splits are not here: they are fixed at ingestion."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    drop_sorry: bool = Field(True, description="Drop `sorry`/`admit` tactics from training rows.")
    drop_no_goals: bool = Field(True, description="Drop tactics whose state before is `no goals`.")
    dedupe: bool = Field(True, description="Keep a theorem (file path, full name) once when several repositories hold it.")
    newest_commit_wins: bool = Field(
        True, description="When one url appears at several commits, keep only the newest (by commit time, else ingestion time)."
    )


def snapshot_id(store, repo_ids: list[str], settings: SnapshotSettings) -> str:
    repos = sorted((r, store.repository(r)["content_hash"]) for r in repo_ids)
    return stable_hash({"repos": repos, "settings": settings.model_dump(), "format": schemas.FORMAT_VERSION}, 20)


def _part_dir(store, repo: dict, settings: SnapshotSettings) -> Path:
    return store.root / "parts" / f"{repo['repo_id']}-{repo['content_hash'][:12]}" / stable_hash(settings.model_dump(), 12)


def build_parts(store, repo: dict, settings: SnapshotSettings) -> tuple[Path, dict]:
    """Filter one repository's rows into per-split parts (once per content and settings).

    Besides the parts, writes `index.parquet` (one row per theorem: identity, splits,
    training rows kept) and the part's counts in `_SUCCESS`, so that a snapshot
    de-duplicates and counts from these small files without reading the parts.
    """
    part = _part_dir(store, repo, settings)
    done = part / "_SUCCESS"
    if done.exists():
        return part, json.loads(done.read_text())
    rid = repo["repo_id"]
    theorems = pq.read_table(store.table_path(rid, "theorems"))
    tactics = pq.read_table(store.table_path(rid, "tactics"))
    keep = pa.array([True] * tactics.num_rows, pa.bool_())
    if settings.drop_sorry:
        keep = pc.and_(keep, pa.array([not is_sorry(t) for t in tactics["tactic"].to_pylist()], pa.bool_()))
    if settings.drop_no_goals:
        keep = pc.and_(keep, pc.not_equal(pc.utf8_trim_whitespace(tactics["state_before"]), "no goals"))
    tactics = tactics.filter(keep)
    theorem_ids = theorems["theorem_id"].to_pylist()
    lengths = dict(zip(theorem_ids, theorems["num_tactics"].to_pylist()))
    tactic_tids = tactics["theorem_id"].to_pylist()
    tactics = tactics.append_column("num_tactics", pa.array([lengths[t] for t in tactic_tids], pa.int64()))
    rows_per_theorem = dict.fromkeys(theorem_ids, 0)
    for t in tactic_tids:
        rows_per_theorem[t] += 1
    index = theorems.select(["repo_id", "theorem_id", "file_path", "full_name", "split_random", "split_novel_premises"])
    index = index.append_column("rows", pa.array([rows_per_theorem[t] for t in theorem_ids], pa.int64()))
    counts = {}
    with atomic.atomic_path(part) as tmp:
        tmp.mkdir(parents=True)
        pq.write_table(index, tmp / "index.parquet")
        for kind in schemas.SPLIT_KINDS:
            col = theorems[f"split_{kind}"]
            counts[kind] = {}
            for split in schemas.SPLITS:
                d = tmp / kind / split
                d.mkdir(parents=True)
                th = theorems.filter(pc.equal(col, split))
                tac = tactics.filter(pc.is_in(tactics["theorem_id"], value_set=th["theorem_id"]))
                pq.write_table(th, d / "theorems.parquet")
                pq.write_table(tac.select(schemas.SNAPSHOT_TACTICS.names).cast(schemas.SNAPSHOT_TACTICS), d / "tactics.parquet")
                counts[kind][split] = {"theorems": th.num_rows, "tactics": tac.num_rows}
        (tmp / "_SUCCESS").write_text(json.dumps(counts))
    return part, counts


INDEX_COLUMNS = ["theorem_id", "file_path", "full_name", "split_random", "split_novel_premises", "rows"]


def _recency(repo: dict):
    t = repo.get("commit_time") or repo["ingested_at"]
    return (t, repo["ingested_at"], repo["repo_id"])


def build_snapshot(store, repo_ids: list[str], settings: SnapshotSettings | None = None,
                   lock_timeout: float = 600.0) -> SnapshotRef:
    """The snapshot of `repo_ids` under `settings`; returns at once if it exists."""
    settings = settings or SnapshotSettings()
    if not repo_ids:
        raise InputError("repo_ids", "no repositories given", "build a snapshot of at least one repository")
    missing = [r for r in repo_ids if not store.has_repository(r)]
    if missing:
        raise InputError(", ".join(missing), "not in the store", "ingest them first (`dojoflow import` or `dojoflow trace`)")
    sid = snapshot_id(store, repo_ids, settings)
    manifest_path = store.root / "snapshots" / sid / "manifest.json"
    if manifest_path.exists():
        return _ref(store, json.loads(manifest_path.read_text()), manifest_path)

    with store.writer(timeout=lock_timeout):
        if manifest_path.exists():  # built by a concurrent writer while we waited
            return _ref(store, json.loads(manifest_path.read_text()), manifest_path)
        repos = {r: store.repository(r) for r in sorted(set(repo_ids))}
        kept = list(repos)
        if settings.newest_commit_wins:
            newest = {}
            for r in kept:
                url = repos[r]["url"].rstrip("/").removesuffix(".git")
                if url not in newest or _recency(repos[r]) > _recency(repos[newest[url]]):
                    newest[url] = r
            kept = sorted(newest.values())
        built = {r: build_parts(store, repos[r], settings) for r in kept}
        parts = {r: b[0] for r, b in built.items()}
        counts = {kind: {split: {name: sum(b[1][kind][split][name] for b in built.values())
                                 for name in ("theorems", "tactics")}
                         for split in schemas.SPLITS} for kind in schemas.SPLIT_KINDS}

        excluded_rel = None
        if settings.dedupe and len(kept) > 1:
            # Newest repository first: it keeps a theorem that several repositories hold.
            seen, excluded = set(), []
            for r in sorted(kept, key=lambda r: _recency(repos[r]), reverse=True):
                index = pq.read_table(parts[r] / "index.parquet", columns=INDEX_COLUMNS).to_pydict()
                for i, key in enumerate(zip(index["file_path"], index["full_name"])):
                    if key not in seen:
                        seen.add(key)
                        continue
                    excluded.append({"repo_id": r, "theorem_id": index["theorem_id"][i]})
                    for kind in schemas.SPLIT_KINDS:
                        c = counts[kind][index[f"split_{kind}"][i]]
                        c["theorems"] -= 1
                        c["tactics"] -= index["rows"][i]
            if excluded:
                excluded_rel = f"snapshots/{sid}/excluded.parquet"
                atomic.write_parquet(store.root / excluded_rel, pa.Table.from_pylist(
                    excluded, schema=pa.schema([("repo_id", pa.string()), ("theorem_id", pa.string())])))

        rel = lambda p: str(Path(p).relative_to(store.root))  # noqa: E731
        manifest = {
            "snapshot_id": sid,
            "repo_ids": sorted(repos),
            "kept_repo_ids": kept,
            "settings": settings.model_dump(),
            "format_version": schemas.FORMAT_VERSION,
            "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "parts": {kind: {split: {t: [rel(parts[r] / kind / split / f"{t}.parquet") for r in kept]
                                     for t in ("theorems", "tactics")}
                             for split in schemas.SPLITS} for kind in schemas.SPLIT_KINDS},
            "corpus": {t: [rel(store.table_path(r, t)) for r in kept] for t in ("premises", "files")},
            "excluded": excluded_rel,
        }
        manifest["counts"] = counts
        first = not any((store.root / "snapshots").glob("*/manifest.json"))
        atomic.write_json(manifest_path, manifest)
        if first:  # the catalog's `snapshots` view lists manifests by glob from now on
            catalog.refresh_views(store)
    return _ref(store, manifest, manifest_path)


def _ref(store, manifest: dict, manifest_path: Path) -> SnapshotRef:
    return SnapshotRef(
        snapshot_id=manifest["snapshot_id"],
        store_root=str(store.root),
        repo_ids=tuple(manifest["repo_ids"]),
        manifest_path=str(manifest_path),
        counts=manifest["counts"],
    )
