"""Writing stored repositories in the LeanDojo layout (docs/leandojo-export.md).

Export streams from the store's Parquet files to JSON with DuckDB: DuckDB builds each
record's JSON text in C++, one repository at a time, and Python only routes those
strings into the six split files. Records carrying keys we do not model (`extra`) are
completed in Python; there are few of them.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import atomic, schemas
from ..errors import InputError, some_names
from ..memory import release_arrow_memory
from ..repo_folder import read_repository
from .files import check_utf8_name
from .records import ABSENT, LISTED

_TACTICS_SQL = """
SELECT theorem_id,
       list(json_object('tactic', tactic, 'annotated_tactic', json_array(annotated_tactic, annotations),
                        'state_before', state_before, 'state_after', state_after) ORDER BY idx) AS tactics,
       CASE WHEN bool_or(extra IS NOT NULL) THEN list(extra ORDER BY idx) END AS tactic_extras
FROM read_parquet($tactics) WHERE theorem_id IN (SELECT unnest($ids)) GROUP BY theorem_id
"""
# A repository's theorems in export order (only their ids), then their records a chunk at a time:
# DuckDB then aggregates and sorts one chunk's tactics, not the whole repository's (issue 15 part C).
_THEOREM_ORDER_SQL = """
SELECT file_row_number AS row, theorem_id, num_tactics FROM read_parquet($theorems, file_row_number = true)
ORDER BY coalesce(export_order, 0), file_path, full_name
"""
_THEOREMS_SQL = f"""
WITH tac AS ({_TACTICS_SQL}),
     chunk AS (SELECT unnest($rows) AS file_row_number, unnest(range(len($rows))) AS pos)
SELECT th.split_random, th.split_novel_premises,
       json_object('url', $url, 'commit', $commit, 'file_path', th.file_path, 'full_name', th.full_name,
                   'theorem_statement', th.theorem_statement, 'start', th.start, 'end', th."end",
                   'traced_tactics', coalesce(to_json(tac.tactics), '[]'::JSON))::VARCHAR AS rec,
       th.extra, tac.tactic_extras
FROM read_parquet($theorems, file_row_number = true) th JOIN chunk USING (file_row_number)
LEFT JOIN tac USING (theorem_id)
ORDER BY chunk.pos
"""
# Tactics per query: DuckDB's working set grows with a chunk, and every chunk scans the
# repository's tactics again. Cut by tactics, not theorems (issue 24: 8 chunks of 256 theorems
# scanned a 2,000-theorem repository's tactics 8 times, half the export's CPU); a repository of
# LeanDojo Benchmark 4's 260,000 tactics is 4 chunks (16,384: 16 scans, 7.3 CPU s against 4.8; benchmarks/README.md).
CHUNK_TACTICS = 65_536
_CORPUS_SQL = """
WITH p AS (
    SELECT repo_id, file_path,
           list(json_object('full_name', full_name, 'code', code, 'start', start, 'end', "end", 'kind', kind)
                ORDER BY idx) AS premises,
           CASE WHEN bool_or(extra IS NOT NULL) THEN list(extra ORDER BY idx) END AS premise_extras
    FROM read_parquet($premises) WHERE NOT from_annotation GROUP BY repo_id, file_path)
SELECT json_object('path', f.path, 'imports', f.imports,
                   'premises', coalesce(to_json(p.premises), '[]'::JSON))::VARCHAR AS rec, p.premise_extras
FROM read_parquet($files) f
JOIN (SELECT unnest($order_repo) AS repo_id, unnest($order_path) AS path, unnest($order_pos) AS pos) o
  ON o.repo_id = f.repo_id AND o.path = f.path
LEFT JOIN p ON p.repo_id = f.repo_id AND p.file_path = f.path
ORDER BY o.pos
"""
_BATCH_ROWS = 512  # rows per Arrow batch: 2,048 held ~10 MiB more at the peak, for no time saved


def _with_extra(rec_json: str, extra: str | None, items_key: str | None = None, item_extras=None) -> str:
    """A record's JSON completed with its kept keys (`extra`): unknown keys appended,
    keys the source lacked (ABSENT) removed; `item_extras` do the same for each item
    of the list under `items_key` (a theorem's tactics, a file's premises)."""
    rec = json.loads(rec_json)
    if extra:
        _apply_extra(rec, json.loads(extra))
    if item_extras:
        for item, e in zip(rec[items_key], item_extras):
            if e:
                _apply_extra(item, json.loads(e))
    return json.dumps(rec, ensure_ascii=False)


def _apply_extra(rec: dict, extra: dict) -> None:
    for key in extra.pop(ABSENT, []):
        rec.pop(key, None)
    rec.update(extra)


def _duckdb():
    """An in-memory DuckDB connection that reads only the Parquet paths it is given."""
    import duckdb

    return duckdb.connect(
        config={"autoinstall_known_extensions": False, "autoload_known_extensions": False, "threads": 1}
    )


def corpus_order(files: pa.Table, repo_rank: dict[str, int]) -> tuple[list, list, list]:
    """(repo_id, path, pos) of the files to write in corpus.jsonl, in writing order.

    A file path held by several repositories (a shared dependency, or a file every
    export of one project lists) is written once, from its first holder, as
    LeanDojo-v2's merged export does: ReProver's and LeanDojo-v2's `Corpus` refuse a
    path listed twice. Files come in their corpus order (one export's order is kept
    exactly), each after the files it imports, which those loaders also require.
    """
    rows = sorted(
        zip(
            files["corpus_order"].to_pylist(),
            (repo_rank[r] for r in files["repo_id"].to_pylist()),
            files["repo_id"].to_pylist(),
            files["path"].to_pylist(),
            files["imports"].to_pylist(),
        )
    )
    first: dict[str, tuple[str, list]] = {}
    for _, _, rid, path, imports in rows:
        first.setdefault(path, (rid, imports))
    done: set[str] = set()
    out_repo, out_path = [], []
    for path in first:  # in corpus order; imports first (iterative: import chains are deep)
        if path in done:
            continue
        done.add(path)
        stack = [(path, iter(first[path][1]))]
        while stack:
            node, pending = stack[-1]
            dep = next((d for d in pending if d in first and d not in done), None)
            if dep is not None:
                done.add(dep)
                stack.append((dep, iter(first[dep][1])))
                continue
            stack.pop()
            out_repo.append(first[node][0])
            out_path.append(node)
    return out_repo, out_path, list(range(len(out_path)))


def check_export_target(store, out: Path) -> None:
    """Refuse a target whose name is not UTF-8 text, or inside (or around) the store."""
    check_utf8_name(out, "choose a folder whose name is UTF-8")
    target, root = out.resolve(), store.root.resolve()
    if target == root or root in target.parents or target in root.parents:
        raise InputError(
            out,
            f"is inside the store's own folders ({root})",
            "export to a folder outside the store, e.g. ./leandojo-export",
        )
    if out.is_symlink() or (out.exists() and (not out.is_dir() or any(out.iterdir()))):
        raise InputError(out, "exists and is not an empty folder", "choose a new folder for the export")


def export_metadata(repos: list[dict]) -> dict:
    """metadata.json of an export of `repos` (in export order).

    The source export's own fields (dataset_name, from_repo, leandojo_version,
    creation_time, ...) are kept from the first repository that came from an export
    with a metadata.json, and every repository's are listed under `repositories`. The
    same store gives the same bytes: without a source `creation_time`, the newest
    ingestion time. Splits Dojoflow computed (the source had none) are said under
    `dojoflow_computed_splits`.
    """
    sources = [json.loads(r["metadata"]) if r.get("metadata") else {} for r in repos]
    main_at = next((i for i, m in enumerate(sources) if m and not m.get(LISTED)), 0)
    main = repos[main_at]
    meta = {k: v for k, v in sources[main_at].items() if k not in ("dojoflow_splits", LISTED)}
    from_repo = meta.get("from_repo") if isinstance(meta.get("from_repo"), dict) else {}
    meta.update(
        {
            "creation_time": meta.get("creation_time")
            or max(r["ingested_at"] for r in repos).isoformat(timespec="seconds"),
            "from_repo": {**from_repo, "url": main["url"], "commit": main["commit"]},
            "leandojo_version": meta.get("leandojo_version", "dojoflow"),
            "exported_by": "dojoflow",
            "repositories": [
                {
                    "url": r["url"],
                    "commit": r["commit"],
                    **{k: m[k] for k in ("dataset_name", "leandojo_version", "from_repo") if k in m},
                }
                for r, m in zip(repos, sources)
            ],
        }
    )
    said = meta.get("dojoflow_computed_splits")  # by the Dojoflow export this one came from
    computed = {**computed_splits(repos), **(said if isinstance(said, dict) else {})}
    if computed:
        meta["dojoflow_computed_splits"] = computed
    return meta


def computed_splits(repos: list[dict]) -> dict:
    """{split kind: how Dojoflow computed it, and for which repositories} for the split
    kinds some repository's source did not carry (its `split_settings` names the kinds it
    kept). docs/leandojo-export.md, "Splits Dojoflow computed"."""
    out: dict[str, dict] = {}
    for r in repos:
        settings = json.loads(r["split_settings"]) if r.get("split_settings") else {}
        kept = settings.get("kept_from_export", list(schemas.SPLIT_KINDS))
        for kind in schemas.SPLIT_KINDS:
            if kind in kept:
                continue
            entry = out.setdefault(
                kind,
                {
                    "rule": _RULES[kind],
                    "val_fraction": settings.get("val_fraction"),
                    "test_fraction": settings.get("test_fraction"),
                    "salt": settings.get("salt"),
                    "repositories": [],
                },
            )
            entry["repositories"].append({"url": r["url"], "commit": r["commit"]})
    return out


_RULES = {
    "random": "dojoflow: a hash of (url, file_path, full_name) (storage/splits.py)",
    "novel_premises": "dojoflow: LeanDojo's rule, ties broken by a hash (storage/splits.py)",
}


def write_export(store, out_dir: str | Path, repo_ids: list[str]) -> Path:
    """Write `repo_ids` in the LeanDojo layout at `out_dir` (atomically, as one folder).

    Streams: no split is ever held whole in Python objects (docs/leandojo-export.md).
    """
    out = Path(out_dir)
    check_export_target(store, out)
    if not repo_ids:
        raise InputError("--repo", "no repositories selected", "name at least one repository, or none to export all")
    repo_ids = list(dict.fromkeys(repo_ids))
    folders = store.folders()
    missing = [r for r in repo_ids if r not in folders]
    if missing:
        raise InputError(some_names(missing), "no such repository in the store", "run `dojoflow repos` to list them")
    repos = [read_repository(folders[r]) for r in repo_ids]
    con = _duckdb()
    try:
        with atomic.atomic_path(out) as tmp:
            tmp.mkdir(parents=True)
            num_theorems = _write_splits(con, tmp, [(repo, folders[r]) for r, repo in zip(repo_ids, repos)])
            _write_corpus(con, tmp, [folders[r] for r in repo_ids], {r: i for i, r in enumerate(repo_ids)})
            meta = export_metadata(repos)
            meta["num_theorems"] = num_theorems
            (tmp / "metadata.json").write_text(json.dumps(meta, indent=2, ensure_ascii=False), encoding="utf-8")
    finally:
        con.close()
        release_arrow_memory()
    return out


def _write_splits(con, tmp: Path, repos: list[tuple[dict, Path]]) -> int:
    """The six split files, one repository after another; the number of theorems."""
    splits = {}
    for kind in schemas.SPLIT_KINDS:
        (tmp / kind).mkdir()
        for split in schemas.SPLITS:
            splits[kind, split] = [open(tmp / kind / f"{split}.json", "w", encoding="utf-8"), ""]
            splits[kind, split][0].write("[")
    num_theorems = 0
    try:
        for repo, folder in repos:
            num_theorems += _write_repository_theorems(con, repo, folder, splits)
        for slot in splits.values():
            slot[0].write("\n]\n" if slot[1] else "]\n")
    finally:
        for f, _ in splits.values():
            f.close()
    return num_theorems


def _write_repository_theorems(con, repo: dict, folder: Path, splits: dict) -> int:
    """Route one repository's theorem records (JSON built by DuckDB) to the split files, a chunk
    of theorems at a time in export order."""
    theorems, tactics = str(folder / "theorems.parquet"), str(folder / "tactics.parquet")
    order = con.sql(_THEOREM_ORDER_SQL, params={"theorems": theorems}).fetchnumpy()
    rows, ids = order["row"].tolist(), order["theorem_id"].tolist()
    count = 0
    for chunk in _chunks(order["num_tactics"]):
        params = {"url": repo["url"], "commit": repo["commit"], "theorems": theorems, "tactics": tactics}
        params.update(rows=rows[chunk], ids=ids[chunk])
        for batch in con.sql(_THEOREMS_SQL, params=params).to_arrow_reader(_BATCH_ROWS):
            count += _route(batch, splits)
    return count


def _chunks(num_tactics) -> list[slice]:
    """Consecutive theorems holding about CHUNK_TACTICS tactics together (at least one theorem)."""
    ends = np.searchsorted(
        np.cumsum(num_tactics), np.arange(1, 1 + int(num_tactics.sum()) // CHUNK_TACTICS) * CHUNK_TACTICS
    )
    bounds = [0, *sorted({int(e) + 1 for e in ends if 0 <= e < len(num_tactics) - 1}), len(num_tactics)]
    return [slice(a, b) for a, b in zip(bounds, bounds[1:]) if b > a]


def _route(batch, splits: dict) -> int:
    """Append one Arrow batch of theorem records to the split files; the number of records."""
    recs = batch.column("rec").to_pylist()
    extras, tactic_extras = batch.column("extra"), batch.column("tactic_extras")
    if extras.null_count < len(extras) or tactic_extras.null_count < len(tactic_extras):
        recs = [
            r if e is None and te is None else _with_extra(r, e, "traced_tactics", te)
            for r, e, te in zip(recs, extras.to_pylist(), tactic_extras.to_pylist())
        ]
    for kind in schemas.SPLIT_KINDS:
        by_split = defaultdict(list)
        for rec, split in zip(recs, batch.column(f"split_{kind}").to_pylist()):
            by_split[split].append(rec)
        for split, chunk in by_split.items():
            slot = splits[kind, split]
            slot[0].write(slot[1] + "\n" + ",\n".join(chunk))
            slot[1] = ","
    return len(recs)


def _write_corpus(con, tmp: Path, folders: list[Path], repo_rank: dict[str, int]) -> None:
    """corpus.jsonl (each file once, imports first) and traced_files.jsonl."""
    files = con.sql(
        "SELECT repo_id, path, imports, corpus_order, traced FROM read_parquet($f)",
        params={"f": [str(f / "files.parquet") for f in folders]},
    ).to_arrow_table()
    in_corpus = files.filter(pc.is_valid(files["corpus_order"]))
    if in_corpus.num_rows:
        order = corpus_order(in_corpus, repo_rank)  # passed as lists: registering an Arrow table costs ~30 MB
        rel = con.sql(
            _CORPUS_SQL,
            params={
                "files": [str(f / "files.parquet") for f in folders],
                "premises": [str(f / "premises.parquet") for f in folders],
                "order_repo": order[0],
                "order_path": order[1],
                "order_pos": order[2],
            },
        )
        with open(tmp / "corpus.jsonl", "w", encoding="utf-8") as f:
            for batch in rel.to_arrow_reader(_BATCH_ROWS):
                recs, extras = batch.column("rec").to_pylist(), batch.column("premise_extras")
                if extras.null_count < len(extras):
                    recs = [
                        r if e is None else _with_extra(r, None, "premises", e)
                        for r, e in zip(recs, extras.to_pylist())
                    ]
                f.write("\n".join(recs) + "\n")
    _write_traced(tmp, files)


def _write_traced(tmp: Path, files: pa.Table) -> None:
    traced = sorted(
        zip(files["corpus_order"].to_pylist(), files["path"].to_pylist(), files["traced"].to_pylist()),
        key=lambda t: (t[0] is None, t[0] or 0, t[1]),
    )
    paths = list(dict.fromkeys(p for _, p, is_traced in traced if is_traced))
    if paths:
        with open(tmp / "traced_files.jsonl", "w", encoding="utf-8") as f:
            f.writelines(json.dumps({"traced_file_path": p}, ensure_ascii=False) + "\n" for p in paths)
