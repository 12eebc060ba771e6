"""LeanDojo Benchmark exports in and out of the store (layout: docs/architecture.md, "Rules taken from LeanDojo and LeanAgent").

`read_export` turns an export folder into one `RepoData` per repository it holds
(the traced repository and dependencies such as mathlib or std, each keyed by its
own url and commit). `import_export` writes them; `write_export` writes any set of
stored repositories back in the LeanDojo layout. Keys we do not model are kept
verbatim in `extra`, so import then export gives identical theorem records.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath

import pyarrow as pa

from . import atomic, schemas
from .errors import InputError
from .ids import COMMIT_RE, repo_id as make_repo_id, repo_name, theorem_id as make_theorem_id
from .repo_data import RepoData
from .splits import SplitSettings, assign_novel_premises, assign_random
from .tactic_text import is_sorry

THEOREM_KEYS = {"url", "commit", "file_path", "full_name", "theorem_statement", "start", "end", "traced_tactics"}
TACTIC_KEYS = {"tactic", "annotated_tactic", "state_before", "state_after"}
PREMISE_KEYS = {"full_name", "code", "start", "end", "kind"}
ABSENT = "_absent_keys"  # in `extra`: keys that the source record did not have at all
_PACKAGE_RE = re.compile(r"^(?:\.lake/packages|lake-packages)/([^/]+)/")


# -- reading and validating -----------------------------------------------------------
def _read_text(path: Path) -> str:
    """A file's text, or an InputError naming it (not a raw OSError/UnicodeDecodeError)."""
    try:
        data = path.read_bytes()
    except OSError as e:
        raise InputError(path, f"cannot be read ({e.strerror or e})", "check that it is a readable file") from e
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        raise InputError(path, f"is not UTF-8 text (byte {e.start}: {e.reason})",
                         "re-create the export: LeanDojo writes UTF-8", where=f"line {line}") from e


def _load_json(path: Path):
    text = _read_text(path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(path, f"malformed JSON at line {e.lineno}, column {e.colno}: {e.msg}",
                         "fix or re-create the file (it must be one JSON document)") from e


def _load_jsonl(path: Path) -> list:
    out = []
    for lineno, line in enumerate(_read_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError as e:
            raise InputError(path, f"malformed JSON: {e.msg}", "fix or re-create the file (one JSON object per line)",
                             where=f"line {lineno}") from e
    return out


def _need(rec: dict, key: str, types, source, where: str, nullable: bool = False):
    if not isinstance(rec, dict):
        raise InputError(source, f"expected a JSON object, found {type(rec).__name__}",
                         "each record must be an object", where=where)
    if key not in rec:
        raise InputError(source, f"field `{key}` is missing", "add it or re-create the export", where=where)
    value = rec[key]
    if value is None and nullable:
        return None
    if not isinstance(value, types) or isinstance(value, bool) and bool not in (types if isinstance(types, tuple) else (types,)):
        raise InputError(source, f"field `{key}` should be {_type_name(types)}, found {json.dumps(value)[:80]}",
                         "fix the record or re-create the export", where=where)
    return value


def _type_name(types) -> str:
    types = types if isinstance(types, tuple) else (types,)
    return " or ".join({str: "a string", list: "a list", dict: "an object", int: "an integer"}.get(t, t.__name__) for t in types)


def _pos(rec: dict, key: str, source, where: str, nullable: bool = False):
    value = _need(rec, key, list, source, where, nullable=nullable)
    if value is None:
        return None
    if len(value) != 2 or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise InputError(source, f"field `{key}` should be [line, column], found {json.dumps(value)[:80]}",
                         "fix the record or re-create the export", where=where)
    return list(value)


def check_relative_path(path: str, source, where: str) -> str:
    p = PurePosixPath(path)
    if not path or p.is_absolute() or ".." in p.parts or "\\" in path:
        raise InputError(source, f"file path {path!r} escapes the repository",
                         "paths must be relative to the repository root, without `..`", where=where)
    return path


def check_commit(commit: str, source, where: str | None = None) -> str:
    if not isinstance(commit, str) or not COMMIT_RE.match(commit):
        raise InputError(source, f"commit {commit!r} is not a commit (expected 40 lowercase hex characters)",
                         "give the full git commit hash", where=where)
    return commit


def _extra(rec: dict, known: set[str], optional: tuple[str, ...] = ()) -> str | None:
    extra = {k: v for k, v in rec.items() if k not in known}
    absent = [k for k in optional if k not in rec]
    if absent:
        extra[ABSENT] = absent
    return json.dumps(extra, sort_keys=True, ensure_ascii=False) if extra else None


def _parse_tactic(t, source, where: str) -> dict:
    tactic = _need(t, "tactic", str, source, where)
    ann = _need(t, "annotated_tactic", list, source, where)
    if len(ann) != 2 or not isinstance(ann[0], str) or not isinstance(ann[1], list):
        raise InputError(source, "field `annotated_tactic` should be [text, [premises]]",
                         "fix the record or re-create the export", where=where)
    annotations = []
    for j, a in enumerate(ann[1]):
        w = f"{where}, annotation {j}"
        annotations.append({
            "full_name": _need(a, "full_name", str, source, w),
            "def_path": check_relative_path(_need(a, "def_path", str, source, w), source, w),
            "def_pos": _pos(a, "def_pos", source, w, nullable=True),
            "def_end_pos": _pos(a, "def_end_pos", source, w, nullable=True),
        })
    return {
        "tactic": tactic,
        "annotated_tactic": ann[0],
        "annotations": annotations,
        "state_before": _need(t, "state_before", str, source, where),
        "state_after": _need(t, "state_after", str, source, where),
        "extra": _extra(t, TACTIC_KEYS),
    }


def _read_split_files(root: Path) -> dict[str, dict[str, list]]:
    """{split_kind: {split: [records]}} for the split kinds present."""
    found = {}
    for kind in schemas.SPLIT_KINDS:
        kind_dir = root / kind
        if not kind_dir.exists():
            continue
        found[kind] = {}
        for split in schemas.SPLITS:
            f = kind_dir / f"{split}.json"
            if not f.exists():
                raise InputError(f, "file is missing", f"a LeanDojo export has {kind}/train.json, val.json and test.json")
            records = _load_json(f)
            if not isinstance(records, list):
                raise InputError(f, f"expected a JSON list of theorems, found {type(records).__name__}",
                                 "re-create the export")
            found[kind][split] = records
    if not found:
        raise InputError(root, "no split folder found (random/ or novel_premises/)",
                         "point at the folder of a LeanDojo export (it holds random/ and novel_premises/)")
    return found


def read_export(path: str | Path, split_settings: SplitSettings | None = None) -> list[RepoData]:
    """Parse and validate a LeanDojo export; return one RepoData per repository in it."""
    root = Path(path)
    settings = split_settings or SplitSettings()
    if not root.exists():
        raise InputError(root, "does not exist", "give the path of a LeanDojo export folder")
    if not root.is_dir():
        raise InputError(root, "is not a folder", "give the path of a LeanDojo export folder")
    meta_path = root / "metadata.json"
    metadata = _load_json(meta_path) if meta_path.exists() else {}
    if not isinstance(metadata, dict):
        raise InputError(meta_path, "expected a JSON object", "re-create the export")
    splits_assigned = metadata.get("dojoflow_splits") != "unassigned"
    split_files = _read_split_files(root)

    # Theorems: one entry per identity, with the split it has in each split kind.
    theorems: dict[tuple, dict] = {}
    split_of: dict[str, dict[tuple, str]] = defaultdict(dict)
    for kind, by_split in split_files.items():
        for split, records in by_split.items():
            source = root / kind / f"{split}.json"
            for i, rec in enumerate(records):
                where = f"record {i}"
                full_name = _need(rec, "full_name", str, source, where)
                where = f"record {i} ({full_name})"
                url = _need(rec, "url", str, source, where)
                commit = check_commit(_need(rec, "commit", str, source, where), source, where)
                file_path = check_relative_path(_need(rec, "file_path", str, source, where), source, where)
                key = (url, commit, file_path, full_name)
                if key in split_of[kind]:
                    raise InputError(source, f"theorem {full_name} in {file_path} appears twice in {kind}/",
                                     "remove the duplicate record", where=where)
                split_of[kind][key] = split
                if key not in theorems:
                    tactics = rec.get("traced_tactics") or []
                    if not isinstance(tactics, list):
                        raise InputError(source, "field `traced_tactics` should be a list", "fix the record", where=where)
                    theorems[key] = {
                        "theorem_statement": _need(rec, "theorem_statement", str, source, where, nullable=True)
                        if "theorem_statement" in rec else None,
                        "start": _pos(rec, "start", source, where),
                        "end": _pos(rec, "end", source, where),
                        "tactics": [_parse_tactic(t, source, f"{where}, tactic {j}") for j, t in enumerate(tactics)],
                        "extra": _extra(rec, THEOREM_KEYS, optional=("theorem_statement", "traced_tactics")),
                        "order": len(theorems),
                    }
    if not theorems:
        raise InputError(root, "the export holds no theorems", "export a repository that has theorems")
    kinds = list(split_files)
    if len(kinds) == 2:
        a, b = (set(split_of[k]) for k in kinds)
        if a != b:
            missing = next(iter(a ^ b))
            raise InputError(root, f"theorem {missing[3]} ({missing[2]}) is in one split kind but not the other",
                             "re-create the export: random/ and novel_premises/ must hold the same theorems")

    # Repositories in this export, keyed by (url, commit).
    by_repo: dict[tuple[str, str], list[tuple]] = defaultdict(list)
    for key in theorems:
        by_repo[key[:2]].append(key)
    from_repo = metadata.get("from_repo") or {}
    main = (from_repo.get("url"), from_repo.get("commit"))
    if main not in by_repo:
        main = max(by_repo, key=lambda k: len(by_repo[k]))

    # Files and premises from the corpus, assigned to repositories.
    corpus_path, traced_path = root / "corpus.jsonl", root / "traced_files.jsonl"
    corpus = _load_jsonl(corpus_path) if corpus_path.exists() else None
    traced = set()
    if traced_path.exists():
        for i, rec in enumerate(_load_jsonl(traced_path)):
            traced.add(check_relative_path(_need(rec, "traced_file_path", str, traced_path, f"line {i + 1}"),
                                           traced_path, f"line {i + 1}"))
    owner_of_file: dict[str, tuple] = {}
    for key in theorems:
        owner_of_file.setdefault(key[2], key[:2])
    package_owner = {}
    for repo in by_repo:
        package_owner[repo_name(repo[0]).lower()] = repo
    for repo_keys in by_repo.values():
        for key in repo_keys:
            m = _PACKAGE_RE.match(key[2])
            if m:
                package_owner[m.group(1).lower()] = key[:2]

    def owner(path: str) -> tuple:
        if path in owner_of_file:
            return owner_of_file[path]
        m = _PACKAGE_RE.match(path)
        if m and m.group(1).lower() in package_owner:
            return package_owner[m.group(1).lower()]
        return main

    files: dict[tuple, list[dict]] = defaultdict(list)
    premises: dict[tuple, list[dict]] = defaultdict(list)
    seen_files = set()
    for i, rec in enumerate(corpus or []):
        where = f"line {i + 1}"
        path = check_relative_path(_need(rec, "path", str, corpus_path, where), corpus_path, where)
        imports = _need(rec, "imports", list, corpus_path, where)
        for j, imp in enumerate(imports):
            w = f"{where}, import {j}"
            if not isinstance(imp, str):
                raise InputError(corpus_path, f"field `imports` should hold strings, found {json.dumps(imp)[:80]}",
                                 "fix the record or re-create the export", where=w)
            check_relative_path(imp, corpus_path, w)
        if path in seen_files:
            raise InputError(corpus_path, f"file {path} appears twice", "remove the duplicate line", where=where)
        seen_files.add(path)
        repo = owner(path)
        files[repo].append({"path": path, "imports": list(imports), "corpus_order": i,
                            "traced": path in traced})
        for j, p in enumerate(_need(rec, "premises", list, corpus_path, where)):
            w = f"{where}, premise {j}"
            premises[repo].append({
                "file_path": path, "full_name": _need(p, "full_name", str, corpus_path, w),
                "code": _need(p, "code", str, corpus_path, w, nullable=True) if "code" in p else None,
                "kind": _need(p, "kind", str, corpus_path, w, nullable=True) if "kind" in p else None,
                "start": _pos(p, "start", corpus_path, w, nullable=True) if "start" in p else None,
                "end": _pos(p, "end", corpus_path, w, nullable=True) if "end" in p else None,
                "idx": j, "from_annotation": False,
                "extra": _extra(p, PREMISE_KEYS, optional=("code", "kind", "start", "end")),
            })
    for path in sorted(traced - seen_files):
        files[owner(path)].append({"path": path, "imports": [], "corpus_order": None, "traced": True})
        seen_files.add(path)
    for key in theorems:
        if key[2] not in seen_files:
            files[key[:2]].append({"path": key[2], "imports": [], "corpus_order": None, "traced": False})
            seen_files.add(key[2])
    if corpus is None:
        # No corpus.jsonl: keep the premises that tactics mention, from their annotations.
        known = set()
        for key, thm in theorems.items():
            for t in thm["tactics"]:
                for a in t["annotations"]:
                    if (a["def_path"], a["full_name"]) in known:
                        continue
                    known.add((a["def_path"], a["full_name"]))
                    repo = owner(a["def_path"]) if a["def_path"] in owner_of_file or _PACKAGE_RE.match(a["def_path"]) else key[:2]
                    premises[repo].append({
                        "file_path": a["def_path"], "full_name": a["full_name"], "code": None, "kind": None,
                        "start": a["def_pos"], "end": a["def_end_pos"], "idx": len(premises[repo]),
                        "from_annotation": True, "extra": None,
                    })

    now = datetime.now(timezone.utc).replace(microsecond=0)
    lean_version = metadata.get("lean_version") or (metadata.get("from_repo") or {}).get("lean_version")
    out = []
    for (url, commit), keys in by_repo.items():
        rid = make_repo_id(url, commit)
        keys.sort(key=lambda k: theorems[k]["order"])
        th_rows, tac_rows = [], []
        for key in keys:
            thm = theorems[key]
            tid = make_theorem_id(rid, key[2], key[3])
            for idx, t in enumerate(thm["tactics"]):
                tac_rows.append({"repo_id": rid, "theorem_id": tid, "file_path": key[2], "full_name": key[3],
                                 "idx": idx, **t})
            th_rows.append({
                "repo_id": rid, "theorem_id": tid, "file_path": key[2], "full_name": key[3],
                "theorem_statement": thm["theorem_statement"], "start": thm["start"], "end": thm["end"],
                "num_tactics": len(thm["tactics"]),
                "has_sorry": any(is_sorry(t["tactic"]) for t in thm["tactics"]),
                "export_order": thm["order"], "extra": thm["extra"],
            })
        ident = [(url, k[2], k[3]) for k in keys]
        if splits_assigned and "random" in split_of:
            random_split = [split_of["random"][k] for k in keys]
        else:
            random_split = assign_random(ident, settings)
        if splits_assigned and "novel_premises" in split_of:
            novel_split = [split_of["novel_premises"][k] for k in keys]
        else:
            used = [{a["full_name"] for t in theorems[k]["tactics"] for a in t["annotations"]} for k in keys]
            novel_split = assign_novel_premises(ident, used, settings)
        for row, r, n in zip(th_rows, random_split, novel_split):
            row["split_random"], row["split_novel_premises"] = r, n
        repo_files = [{"repo_id": rid, **f} for f in files.get((url, commit), [])]
        repo_premises = [{"repo_id": rid, **p} for p in premises.get((url, commit), [])]
        split_record = {"kept_from_export": [k for k in schemas.SPLIT_KINDS if splits_assigned and k in split_of],
                        **settings.model_dump()}
        repository = {
            "repo_id": rid, "url": url, "commit": commit, "name": repo_name(url),
            "lean_version": lean_version if (url, commit) == main else None,
            "source": metadata.get("dojoflow_source", "leandojo_export"), "source_path": str(root.resolve()),
            "commit_time": _parse_time(metadata.get("commit_time")) if (url, commit) == main else None,
            "ingested_at": now,
            "split_settings": json.dumps(split_record, sort_keys=True),
            "metadata": json.dumps(metadata, sort_keys=True, ensure_ascii=False) if (url, commit) == main else None,
        }
        out.append(RepoData(
            repository=repository,
            files=pa.Table.from_pylist(repo_files, schema=schemas.FILES),
            theorems=pa.Table.from_pylist(th_rows, schema=schemas.THEOREMS),
            tactics=pa.Table.from_pylist(tac_rows, schema=schemas.TACTICS),
            premises=pa.Table.from_pylist(repo_premises, schema=schemas.PREMISES),
        ))
    out.sort(key=lambda d: (d.repository["url"], d.repository["commit"]) != main)
    return out


def _parse_time(value) -> datetime | None:
    if not value:
        return None
    try:
        t = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


def import_export(store, path: str | Path, split_settings: SplitSettings | None = None,
                  replace: bool = False, lock_timeout: float = 0.0) -> list:
    """Read, validate, then write every repository of an export. Nothing is written
    unless the whole export is valid and no repository conflicts; all of them appear
    together, in one rename (`Store.add_repositories`)."""
    repos = read_export(path, split_settings)
    return store.ingest(repos, replace=replace, lock_timeout=lock_timeout)


# -- writing ------------------------------------------------------------------------
def _theorem_record(repo: dict, th: dict, tactics: list[dict]) -> dict:
    extra = json.loads(th["extra"]) if th["extra"] else {}
    absent = set(extra.pop(ABSENT, []))
    rec = {"url": repo["url"], "commit": repo["commit"], "file_path": th["file_path"], "full_name": th["full_name"]}
    if "theorem_statement" not in absent:
        rec["theorem_statement"] = th["theorem_statement"]
    rec["start"], rec["end"] = list(th["start"]), list(th["end"])
    if "traced_tactics" not in absent:
        rec["traced_tactics"] = [_tactic_record(t) for t in tactics]
    rec.update(extra)
    return rec


def _tactic_record(t: dict) -> dict:
    rec = {
        "tactic": t["tactic"],
        "annotated_tactic": [t["annotated_tactic"], [
            {"full_name": a["full_name"], "def_path": a["def_path"],
             "def_pos": list(a["def_pos"]) if a["def_pos"] is not None else None,
             "def_end_pos": list(a["def_end_pos"]) if a["def_end_pos"] is not None else None}
            for a in t["annotations"]]],
        "state_before": t["state_before"],
        "state_after": t["state_after"],
    }
    if t.get("extra"):
        rec.update(json.loads(t["extra"]))
    return rec


def _premise_record(p: dict) -> dict:
    extra = json.loads(p["extra"]) if p["extra"] else {}
    absent = set(extra.pop(ABSENT, []))
    rec = {"full_name": p["full_name"]}
    for key in ("code", "start", "end", "kind"):
        if key not in absent:
            v = p[key]
            rec[key] = list(v) if isinstance(v, (list, tuple)) else v
    rec.update(extra)
    return rec


def write_export(store, out_dir: str | Path, repo_ids: list[str]) -> Path:
    """Write `repo_ids` in the LeanDojo layout at `out_dir` (atomically, as one folder)."""
    out = Path(out_dir)
    if out.exists() and any(out.iterdir()):
        raise InputError(out, "exists and is not empty", "choose a new folder for the export")
    if not repo_ids:
        raise InputError("--repo", "no repositories selected", "name at least one repository, or none to export all")
    repos = {r: store.repository(r) for r in repo_ids}
    theorems = store.read_table("theorems", repo_ids).to_pylist()
    tactics_by = defaultdict(list)
    for t in store.read_table("tactics", repo_ids).to_pylist():
        tactics_by[t["theorem_id"]].append(t)
    for ts in tactics_by.values():
        ts.sort(key=lambda t: t["idx"])
    theorems.sort(key=lambda t: (repo_ids.index(t["repo_id"]), t["export_order"] if t["export_order"] is not None else 0,
                                 t["file_path"], t["full_name"]))
    files = store.read_table("files", repo_ids).to_pylist()
    premises_by = defaultdict(list)
    for p in store.read_table("premises", repo_ids).to_pylist():
        if not p["from_annotation"]:
            premises_by[(p["repo_id"], p["file_path"])].append(p)
    corpus_files = sorted((f for f in files if f["corpus_order"] is not None),
                          key=lambda f: (f["corpus_order"], repo_ids.index(f["repo_id"])))
    main = repos[repo_ids[0]]
    meta = json.loads(main["metadata"]) if main.get("metadata") else {}
    meta = {k: v for k, v in meta.items() if k != "dojoflow_splits"}
    meta.update({
        "creation_time": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "from_repo": {"url": main["url"], "commit": main["commit"]},
        "leandojo_version": meta.get("leandojo_version", "dojoflow"),
        "exported_by": "dojoflow",
        "repositories": [{"url": repos[r]["url"], "commit": repos[r]["commit"]} for r in repo_ids],
        "num_theorems": len(theorems),
    })
    with atomic.atomic_path(out) as tmp:
        tmp.mkdir(parents=True)
        for kind in schemas.SPLIT_KINDS:
            (tmp / kind).mkdir()
            for split in schemas.SPLITS:
                recs = [_theorem_record(repos[t["repo_id"]], t, tactics_by[t["theorem_id"]])
                        for t in theorems if t[f"split_{kind}"] == split]
                (tmp / kind / f"{split}.json").write_text(json.dumps(recs, ensure_ascii=False), encoding="utf-8")
        if corpus_files:
            with open(tmp / "corpus.jsonl", "w", encoding="utf-8") as f:
                for cf in corpus_files:
                    prem = sorted(premises_by[(cf["repo_id"], cf["path"])], key=lambda p: p["idx"])
                    f.write(json.dumps({"path": cf["path"], "imports": list(cf["imports"]),
                                        "premises": [_premise_record(p) for p in prem]}, ensure_ascii=False) + "\n")
        traced = [f["path"] for f in sorted(files, key=lambda f: (f["corpus_order"] is None, f["corpus_order"] or 0, f["path"]))
                  if f["traced"]]
        if traced:
            with open(tmp / "traced_files.jsonl", "w", encoding="utf-8") as f:
                for p in traced:
                    f.write(json.dumps({"traced_file_path": p}) + "\n")
        (tmp / "metadata.json").write_text(json.dumps(meta, indent=2, ensure_ascii=False), encoding="utf-8")
    return out
