"""`build_snapshot`: the merged data of a set of repositories, without copying it.

For each repository, its training rows are filtered once into per-repository parts
(`parts/<repo_id>-<content>/<settings>/<kind>/<split>/{theorems,tactics}.parquet`),
reused by every later snapshot that includes it; ingestion builds them for the
default settings. A snapshot is then a manifest listing parts plus a small table
of theorems excluded by de-duplication. The cost of step k is reading each
repository's `_SUCCESS` (its counts and the file paths of its theorems); only
repositories that share a file path with another can share a theorem, and of
those only the `index.parquet` is read: one integer column (a 64-bit hash of each
theorem's identity) and, where hashes repeat, those rows' names, compared
exactly. Vectorised, never a Python loop over theorems, never rewriting data
(LeanDojo-v2 rewrites all JSON each step).

Rules (as LeanDojo-v2's export): `sorry` tactics and tactics whose state before
is `no goals` are dropped from training rows; a theorem present in several
repositories is kept once; when one url appears at two commits, the newer wins.

"Newer" is by commit time (tracing and exports with `commit_time` in metadata.json
record it). When any of the commits of that url lacks one (LeanDojo's own exports
do not carry it), all of them are compared by ingestion time instead: the one
imported last wins, which is right when repositories are imported as they
evolve, and wrong if an older commit is imported after a newer one.
"""

from __future__ import annotations

import copy
import json
import os
from datetime import UTC, datetime
from hashlib import blake2b
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pydantic import BaseModel, ConfigDict, Field

from . import atomic, catalog, schemas
from .contamination import REPORT_FILE, ContaminationSettings, exclusions_with_reasons
from .errors import InputError, some_names
from .ids import stable_hash
from .memory import release_arrow_memory
from .repo_folder import read_repository
from .repo_urls import normalize_url
from .snapshot_ref import SnapshotRef, has_manifests


class SnapshotSettings(BaseModel):
    """What a snapshot keeps. Splits are not here: they are fixed at ingestion."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    drop_sorry: bool = Field(True, description="Drop `sorry`/`admit` tactics from training rows.")
    drop_no_goals: bool = Field(True, description="Drop tactics whose state before is `no goals`.")
    dedupe: bool = Field(
        True, description="Keep a theorem (file path, full name) once when several repositories hold it."
    )
    newest_commit_wins: bool = Field(
        True,
        description="When one url appears at several commits, keep only the newest: by commit time when "
        "every one of them has it, else by ingestion time (the last imported wins).",
    )
    benchmarks: tuple[str, ...] = Field(
        (),
        description="Fingerprints of the benchmarks whose statements (and near-copies) leave the training data "
        "(set from the pipeline's `benchmarks:` section; storage/contamination.py).",
    )
    contamination: ContaminationSettings = Field(
        default_factory=ContaminationSettings,
        description="When a theorem counts as a copy of a benchmark's or of another repository's.",
    )


# The settings under which nothing is checked (no benchmark, no cross-repository copies): the only
# ones whose snapshot ids leave the contamination settings out, as ids did before the check existed.
# The default checks cross-repository copies, so a default snapshot has a new id, never an old one's.
NO_CHECK = ContaminationSettings(cross_repository=False)


def snapshot_id(store, repo_ids: list[str], settings: SnapshotSettings, repos: dict[str, dict] | None = None) -> str:
    """Content address of a snapshot; `repos` ({repo_id: record}) saves re-reading the records."""
    if repos is None:
        repos = {r: store.repository(r) for r in set(repo_ids)}
    pairs = sorted((r, repos[r]["content_hash"]) for r in repo_ids)
    dump = settings.model_dump()
    if not settings.benchmarks and settings.contamination == NO_CHECK:
        del dump["benchmarks"], dump["contamination"]  # no check: the id snapshots had before there was one
    return stable_hash({"repos": pairs, "settings": dump, "format": schemas.FORMAT_VERSION}, 20)


def _settings_key(settings: SnapshotSettings) -> str:
    """The key of the per-repository parts: only what filters a repository's own rows."""
    return stable_hash(settings.model_dump(exclude={"benchmarks", "contamination"}), 12)


def _part_rel(repo: dict, settings_key: str) -> str:
    """A repository's parts folder under the store root, as a relative posix path."""
    return f"parts/{repo['repo_id']}-{repo['content_hash'][:12]}/{settings_key}"


def theorem_keys(file_paths: list[str], full_names: list[str]) -> pa.Array:
    """64-bit hashes of theorem identities across repositories, (file_path, full_name).

    Stored in each part's index so that a snapshot finds theorems shared by several
    repositories from one integer column per repository. Equal hashes only make
    rows candidates: de-duplication compares the strings themselves.
    """
    return pa.array(
        [
            int.from_bytes(blake2b(f"{p}\x00{n}".encode(), digest_size=8).digest(), "big")
            for p, n in zip(file_paths, full_names)
        ],
        pa.uint64(),
    )


def build_parts(
    store, repo: dict, settings: SnapshotSettings, theorems: pa.Table | None = None, tactics: pa.Table | None = None
) -> dict:
    """Filter one repository's rows into per-split parts (once per content and settings).

    Besides the parts, writes `index.parquet` (one row per theorem: identity, its
    cross-repository `key` hash, splits, training rows kept) and `_SUCCESS` (the
    part's counts per split kind and split, and the theorems' distinct file paths),
    so that a snapshot counts and de-duplicates from these small files without
    reading the parts. Returns that summary. `theorems` and `tactics`: the repository's
    tables when the caller holds them (ingestion), else they are read from the store.
    """
    rel = _part_rel(repo, _settings_key(settings))
    summary = _part_summary(store, rel)
    if summary is not None:
        return summary
    part = store.root / rel
    rid = repo["repo_id"]
    from .snapshot_parts import tactic_pieces, write_tactic_parts

    if theorems is None:
        theorems = pq.read_table(store.table_path(rid, "theorems"))
    # The tactics a row group at a time when the stored file has several (storage/snapshot_parts.py).
    pieces, streamed = tactic_pieces(tactics, store, rid)
    counts = {}
    with atomic.atomic_path(part) as tmp:
        tmp.mkdir(parents=True)
        for kind in schemas.SPLIT_KINDS:
            for split in schemas.SPLITS:
                (tmp / kind / split).mkdir(parents=True)
        rows, tactic_counts = write_tactic_parts(tmp, theorems, pieces, streamed, settings)
        index = theorems.select(
            ["repo_id", "theorem_id", "file_path", "full_name", "split_random", "split_novel_premises"]
        )
        index = index.append_column("rows", rows)
        index = index.append_column(
            "key", theorem_keys(theorems["file_path"].to_pylist(), theorems["full_name"].to_pylist())
        )
        pq.write_table(index, tmp / "index.parquet", compression="zstd")
        for kind in schemas.SPLIT_KINDS:
            col = theorems[f"split_{kind}"]
            counts[kind] = {}
            for split in schemas.SPLITS:
                th = theorems.filter(pc.equal(col, split))
                pq.write_table(th, tmp / kind / split / "theorems.parquet", compression="zstd")
                counts[kind][split] = {"theorems": th.num_rows, "tactics": tactic_counts[kind][split]}
        summary = {**counts, "file_paths": sorted(pc.unique(theorems["file_path"]).to_pylist())}
        (tmp / "_SUCCESS").write_text(json.dumps(summary))
    return summary


INDEX_COLUMNS = ["repo_id", "theorem_id", "file_path", "full_name", "split_random", "split_novel_premises", "rows"]


def _index_keys(index_path: Path) -> pa.Array:
    """The `key` column of a part's index (computed from the names for an index
    written before it had one)."""
    with pq.ParquetFile(index_path, pre_buffer=False) as f:  # one small column: no read-ahead
        if "key" in f.schema_arrow.names:
            return f.read(columns=["key"], use_threads=False).column(0).combine_chunks()
        names = f.read(columns=["file_path", "full_name"], use_threads=False)
    return theorem_keys(names["file_path"].to_pylist(), names["full_name"].to_pylist())


def duplicate_theorems(indexes: list[Path]) -> pa.Table | None:
    """Rows of the part indexes `indexes` (newest repository first) whose theorem
    (file_path, full_name) an earlier index already holds: the first holder keeps
    it. Returns them (INDEX_COLUMNS) in that order, or None when there are none.

    Vectorised: one integer column per index; only rows whose key hash occurs
    more than once are read in full and compared by their names.
    """
    keys = [_index_keys(p) for p in indexes]
    seen = pc.value_counts(pa.concat_arrays(keys))
    shared = seen.field("values").filter(pc.greater(seen.field("counts"), 1))
    if len(shared) == 0:
        return None  # distinct hashes: distinct theorems
    candidates = []
    for path, key in zip(indexes, keys):
        mask = pc.is_in(key, value_set=shared)
        if pc.any(mask).as_py():
            candidates.append(pq.read_table(path, columns=INDEX_COLUMNS, use_threads=False).filter(mask))
    cand = pa.concat_tables(candidates).combine_chunks()
    # An exact key per (file_path, full_name) pair: the two names' dictionary codes.
    fp = pc.dictionary_encode(cand["file_path"]).chunk(0)
    fn = pc.dictionary_encode(cand["full_name"]).chunk(0)
    pair = pc.add(pc.multiply(fp.indices.cast(pa.int64()), len(fn.dictionary)), fn.indices.cast(pa.int64()))
    # Codes are numbered by first occurrence, so a row holds its pair first exactly
    # when its code exceeds every code before it.
    code = pc.dictionary_encode(pair).indices.cast(pa.int64())
    before = pa.concat_arrays([pa.array([-1], pa.int64()), pc.cumulative_max(code).slice(0, len(code) - 1)])
    later = pc.less_equal(code, before)
    return cand.filter(later) if pc.any(later).as_py() else None


def _recency(repo: dict):
    """Order for de-duplication across repositories (the most recent keeps a theorem)."""
    t = repo.get("commit_time") or repo["ingested_at"]
    return (t, repo["ingested_at"], repo["repo_id"])


def newest_commits(repos: dict[str, dict]) -> list[str]:
    """Of the repositories of each url, the newest: by commit time when every commit of
    that url has one, else by ingestion time (commit times and ingestion times are
    not comparable, so they are never mixed). Ties go to the larger repo id."""
    by_url: dict[str, list[dict]] = {}
    for r in repos.values():
        by_url.setdefault(normalize_url(r["url"]), []).append(r)
    kept = []
    for group in by_url.values():
        if all(r.get("commit_time") for r in group):
            best = max(group, key=lambda r: (r["commit_time"], r["ingested_at"], r["repo_id"]))
        else:
            best = max(group, key=lambda r: (r["ingested_at"], r["repo_id"]))
        kept.append(best["repo_id"])
    return sorted(kept)


def _folders(store, repo_ids: list[str]) -> dict[str, Path]:
    """{repo_id: folder} of `repo_ids`, from one read of the commit record."""
    listed = store.folders()
    missing = [r for r in repo_ids if r not in listed]
    if missing:
        raise InputError(
            some_names(missing), "not in the store", "ingest them first (`dojoflow import` or `dojoflow trace`)"
        )
    return {r: listed[r] for r in sorted(set(repo_ids))}


def _part_summary(store, part_rel: str) -> dict | None:
    """A finished part's `_SUCCESS` (counts and file paths), or None if it is not built."""
    try:
        with open(os.path.join(store.root, part_rel, "_SUCCESS")) as f:
            return json.load(f)
    except FileNotFoundError:
        return None


def sharing_file_paths(summaries: dict[str, dict]) -> set[str]:
    """The repositories (of {repo_id: part summary}) that hold theorems in a file path
    that another of them also holds: only those can share a theorem (file_path,
    full_name). All of them when a part predates the file-path list."""
    if any("file_paths" not in s for s in summaries.values()):
        return set(summaries)
    paths = {r: set(s["file_paths"]) for r, s in summaries.items()}
    seen: set[str] = set()
    shared: set[str] = set()
    for ps in paths.values():
        shared |= seen & ps
        seen |= ps
    return {r for r, ps in paths.items() if not shared.isdisjoint(ps)} if shared else set()


def build_snapshot(
    store, repo_ids: list[str], settings: SnapshotSettings | None = None, lock_timeout: float = 600.0
) -> SnapshotRef:
    """The snapshot of `repo_ids` under `settings`; returns at once if it exists."""
    try:
        return _build_snapshot(store, repo_ids, settings, lock_timeout)
    finally:
        release_arrow_memory()  # the tables it read are garbage now (storage/memory.py)


def _build_snapshot(store, repo_ids: list[str], settings: SnapshotSettings | None, lock_timeout: float) -> SnapshotRef:
    settings = settings or SnapshotSettings()
    if not repo_ids:
        raise InputError("repo_ids", "no repositories given", "build a snapshot of at least one repository")
    folders = _folders(store, repo_ids)
    repos = {r: read_repository(f) for r, f in folders.items()}
    sid = snapshot_id(store, repo_ids, settings, repos)
    manifest_path = store.root / "snapshots" / sid / "manifest.json"
    if manifest_path.exists():
        return SnapshotRef.of_manifest(store.root, manifest_path)

    with store.writer(timeout=lock_timeout):
        now = _folders(store, repo_ids)
        if now != folders:  # a writer replaced one of them while we waited (folders carry the content hash)
            folders, repos = now, {r: read_repository(f) for r, f in now.items()}
            sid = snapshot_id(store, repo_ids, settings, repos)
            manifest_path = store.root / "snapshots" / sid / "manifest.json"
        if manifest_path.exists():  # built by a concurrent writer while we waited
            return SnapshotRef.of_manifest(store.root, manifest_path)
        kept = newest_commits(repos) if settings.newest_commit_wins else list(repos)
        part = {r: _part_rel(repos[r], _settings_key(settings)) for r in kept}
        # Ingestion builds the parts for the default settings: then this only reads their summaries.
        summaries = {r: build_parts(store, repos[r], settings) for r in kept}
        counts = _summed_counts(summaries)
        excluded_rel, contamination_rel = None, None
        dropped = _duplicates(store, settings, kept, repos, part, summaries)
        dropped, report = _with_contamination(store, settings, kept, repos, part, dropped)
        _refuse_emptied_splits(counts, dropped, report)
        if report is not None:
            contamination_rel = f"snapshots/{sid}/{REPORT_FILE}"
            atomic.write_json(store.root / contamination_rel, report)
        if dropped is not None:
            _subtract(counts, dropped)
            excluded_rel = f"snapshots/{sid}/excluded.parquet"
            _write_excluded(store.root / excluded_rel, dropped)
        manifest = {
            "snapshot_id": sid,
            "repo_ids": sorted(repos),
            "kept_repo_ids": kept,
            "settings": settings.model_dump(),
            "format_version": schemas.FORMAT_VERSION,
            "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
            **_paths(store, kept, part, folders),
            "excluded": excluded_rel,
            "contamination": contamination_rel,
            "counts": counts,
        }
        first = not has_manifests(store)
        atomic.write_json(manifest_path, manifest)
        if first:  # the catalog's `snapshots` view lists manifests by glob from now on
            catalog.refresh_views(store)
    return SnapshotRef.of_manifest(store.root, manifest_path, manifest)


def _refuse_emptied_splits(counts: dict, dropped, report: dict | None) -> None:
    """A benchmark that is (or holds) the training data excluded 84 of 89 theorems and the run
    trained on the rest in silence: a split it leaves with no theorem is an InputError, before
    anything of the snapshot is written."""
    by_benchmark = [e for e in (report or {}).get("excluded", []) if e["benchmark"]]
    if dropped is None or not by_benchmark:
        return
    after = copy.deepcopy(counts)
    _subtract(after, dropped)
    emptied = [
        f"{kind}/{split}"
        for kind in schemas.SPLIT_KINDS
        for split in schemas.SPLITS
        if counts[kind][split]["theorems"] > 0 and after[kind][split]["theorems"] <= 0
    ]
    if emptied:
        names = sorted({e["benchmark"] for e in by_benchmark})
        raise InputError(
            f"benchmarks {', '.join(names)}",
            f"exclude every theorem of split {', '.join(emptied)} ({len(by_benchmark)} theorems in all state "
            "a benchmark's statements): the benchmark is the training data",
            "give a benchmark that is not the repositories trained on, or remove it from `benchmarks:`",
        )


def _summed_counts(summaries: dict) -> dict:
    """Theorems and tactics per split kind and split, summed over the repositories' parts."""
    return {
        kind: {
            split: {name: sum(c[kind][split][name] for c in summaries.values()) for name in ("theorems", "tactics")}
            for split in schemas.SPLITS
        }
        for kind in schemas.SPLIT_KINDS
    }


def _duplicates(store, settings: SnapshotSettings, kept, repos, part, summaries):
    """The theorems deduplication drops (a table), or None when no two repositories share a file path."""
    suspects = sharing_file_paths(summaries) if settings.dedupe and len(kept) > 1 else set()
    if not suspects:
        return None
    # Newest first: the first index to hold a theorem keeps it. Repositories whose
    # file paths no other one holds share no theorem, so they need not be read.
    newest_first = [r for r in sorted(kept, key=lambda r: _recency(repos[r]), reverse=True) if r in suspects]
    return duplicate_theorems([store.root / part[r] / "index.parquet" for r in newest_first])


def _subtract(counts: dict, dropped: pa.Table) -> None:
    """Take the dropped theorems and their tactics out of `counts`."""
    for kind in schemas.SPLIT_KINDS:
        by_split = (
            dropped.group_by(f"split_{kind}", use_threads=False)
            .aggregate([("theorem_id", "count"), ("rows", "sum")])
            .to_pydict()
        )
        for split, n, rows in zip(by_split[f"split_{kind}"], by_split["theorem_id_count"], by_split["rows_sum"]):
            counts[kind][split]["theorems"] -= n
            counts[kind][split]["tactics"] -= rows


def _write_excluded(path: Path, dropped: pa.Table) -> None:
    schema = pa.schema([("repo_id", pa.string()), ("theorem_id", pa.string()), ("reason", pa.string())])
    atomic.write_parquet(path, dropped.select(["repo_id", "theorem_id", "reason"]).cast(schema))


def _paths(store, kept: list[str], part: dict, folders: dict) -> dict:
    """The manifest's `parts` (per split kind, split and table) and `corpus` file lists."""
    folder = {r: str(folders[r].relative_to(store.root)) for r in kept}
    return {
        "parts": {
            kind: {
                split: {t: [f"{part[r]}/{kind}/{split}/{t}.parquet" for r in kept] for t in ("theorems", "tactics")}
                for split in schemas.SPLITS
            }
            for kind in schemas.SPLIT_KINDS
        },
        "corpus": {t: [f"{folder[r]}/{t}.parquet" for r in kept] for t in ("premises", "files")},
    }


def _with_contamination(store, settings: SnapshotSettings, kept, repos, part, dropped):
    """`dropped` with a `reason`, plus what the contamination rule excludes (newest repository first)."""
    newest_first = sorted(kept, key=lambda r: _recency(repos[r]), reverse=True)
    check = bool(settings.benchmarks) or (settings.contamination.cross_repository and len(kept) > 1)
    indexes = [store.root / part[r] / "index.parquet" for r in newest_first] if check else []
    return exclusions_with_reasons(store, indexes, INDEX_COLUMNS, dropped, settings.benchmarks, settings.contamination)
