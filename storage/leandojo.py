"""LeanDojo Benchmark exports in and out of the store (layout: docs/architecture.md, "Rules taken from LeanDojo and LeanAgent").

`read_export` turns an export folder into one `RepoData` per repository it holds
(the traced repository and dependencies such as mathlib or std, each keyed by its
own url and commit). `import_export` writes them; `write_export` writes any set of
stored repositories back in the LeanDojo layout. Keys we do not model are kept
verbatim in `extra`, so import then export gives identical theorem records.
"""

from __future__ import annotations

import gc
import json
import os
import re
from collections import defaultdict
from contextlib import contextmanager
from datetime import UTC, datetime
from functools import lru_cache
from itertools import accumulate
from pathlib import Path, PurePosixPath
from typing import Annotated

import msgspec
import pyarrow as pa
import pyarrow.compute as pc

from . import atomic, schemas
from .errors import InputError
from .ids import COMMIT_RE, repo_name, theorem_ids
from .ids import repo_id as make_repo_id
from .repo_data import RepoData
from .repo_urls import redact_url, url_credentials
from .splits import SplitSettings, assign_novel_premises, assign_random
from .tactic_text import sorry_mask

THEOREM_KEYS = {"url", "commit", "file_path", "full_name", "theorem_statement", "start", "end", "traced_tactics"}
TACTIC_KEYS = {"tactic", "annotated_tactic", "state_before", "state_after"}
PREMISE_KEYS = {"full_name", "code", "start", "end", "kind"}
ABSENT = "_absent_keys"  # in `extra`: keys that the source record did not have at all
_PACKAGE_RE = re.compile(r"^(?:\.lake/packages|lake-packages)/([^/]+)/")


# -- reading and validating -----------------------------------------------------------
def _read_bytes(path: Path) -> bytes:
    """A file's bytes, or an InputError naming it (not a raw OSError)."""
    try:
        return path.read_bytes()
    except OSError as e:
        raise InputError(path, f"cannot be read ({e.strerror or e})", "check that it is a readable file") from e


def _read_text(path: Path, data: bytes | None = None) -> str:
    """A file's text (of its `data` when read already), or an InputError naming it."""
    if data is None:
        data = _read_bytes(path)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise InputError(
            path,
            f"is not UTF-8 text (byte {e.start}: {e.reason})",
            "re-create the export: LeanDojo writes UTF-8",
            where=f"line {line}",
        ) from e


def _load_json(path: Path, data: bytes | None = None):
    text = _read_text(path, data)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(
            path,
            f"malformed JSON at line {e.lineno}, column {e.colno}: {e.msg}",
            "fix or re-create the file (it must be one JSON document)",
        ) from e
    except RecursionError as e:
        raise InputError(path, "JSON nested too deeply to read", _DEEP_FIX) from e
    if _SURROGATE_ESCAPE.search(text):
        if isinstance(data, list):
            for i, rec in enumerate(data):
                _check_unicode(rec, path, f"record {i}")
        else:
            _check_unicode(data, path, None)
    return data


def _load_jsonl(path: Path) -> list:
    out = []
    for lineno, line in enumerate(_read_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError as e:
            raise InputError(
                path,
                f"malformed JSON: {e.msg}",
                "fix or re-create the file (one JSON object per line)",
                where=f"line {lineno}",
            ) from e
        except RecursionError as e:
            raise InputError(path, "JSON nested too deeply to read", _DEEP_FIX, where=f"line {lineno}") from e
        if _SURROGATE_ESCAPE.search(line):
            _check_unicode(out[-1], path, f"line {lineno}")
    return out


_DEEP_FIX = "re-create the file: LeanDojo's records are only a few levels deep"
# A \uD800-\uDFFF escape: the only way JSON text read as UTF-8 can hold a surrogate.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def _check_unicode(value, source, where: str | None) -> None:
    """InputError naming the first string (or key) in `value` that holds a lone
    surrogate: it is not Unicode text, and could not be stored or written as UTF-8."""
    stack = [(value, "")]
    while stack:
        v, field = stack.pop()
        if isinstance(v, str):
            try:
                v.encode("utf-8")
            except UnicodeEncodeError as e:
                bad = v[e.start].encode("utf-8", "backslashreplace").decode()
                raise InputError(
                    source,
                    f"field `{field or 'value'}` holds a lone surrogate ({bad}), which is not text",
                    "re-create the export (LeanDojo writes valid UTF-8), or remove the escape",
                    where=where,
                ) from None
        elif isinstance(v, dict):
            for k, x in v.items():
                stack.append((k, field or "key"))
                stack.append((x, f"{field}.{k}" if field else k))
        elif isinstance(v, list):
            stack.extend((x, f"{field}[{i}]") for i, x in enumerate(v))


def _need(rec: dict, key: str, types, source, where: str, nullable: bool = False):
    if not isinstance(rec, dict):
        raise InputError(
            source, f"expected a JSON object, found {type(rec).__name__}", "each record must be an object", where=where
        )
    if key not in rec:
        raise InputError(source, f"field `{key}` is missing", "add it or re-create the export", where=where)
    value = rec[key]
    if value is None and nullable:
        return None
    if (
        not isinstance(value, types)
        or isinstance(value, bool)
        and bool not in (types if isinstance(types, tuple) else (types,))
    ):
        raise InputError(
            source,
            f"field `{key}` should be {_type_name(types)}, found {json.dumps(value)[:80]}",
            "fix the record or re-create the export",
            where=where,
        )
    return value


def _type_name(types) -> str:
    types = types if isinstance(types, tuple) else (types,)
    return " or ".join(
        {str: "a string", list: "a list", dict: "an object", int: "an integer"}.get(t, t.__name__) for t in types
    )


MAX_POS = 2**63 - 1  # positions are stored as 64-bit integers


def _pos(rec: dict, key: str, source, where: str, nullable: bool = False):
    value = _need(rec, key, list, source, where, nullable=nullable)
    if value is None:
        return None
    if len(value) != 2 or not all(type(v) is int and 0 <= v <= MAX_POS for v in value):
        raise InputError(
            source,
            f"field `{key}` should be [line, column] (two integers, 0 or more), found {json.dumps(value)[:80]}",
            "fix the record or re-create the export",
            where=where,
        )
    return list(value)


def _span(rec: dict, start_key: str, end_key: str, source, where: str, nullable: bool = False, optional: bool = False):
    """(start, end) positions of a record, `end` not before `start` (`optional`: a
    missing key reads as None)."""
    start = _pos(rec, start_key, source, where, nullable=nullable) if not optional or start_key in rec else None
    end = _pos(rec, end_key, source, where, nullable=nullable) if not optional or end_key in rec else None
    if start is not None and end is not None and end < start:
        raise InputError(
            source,
            f"field `{end_key}` {end} comes before `{start_key}` {start}",
            "fix the positions or re-create the export",
            where=where,
        )
    return start, end


def _url(rec: dict, source, where: str) -> str:
    url = _need(rec, "url", str, source, where)
    if not url.strip():
        raise InputError(
            source,
            "field `url` is empty",
            "give the repository's url, as LeanDojo writes it (e.g. https://github.com/owner/repo)",
            where=where,
        )
    if url_credentials(url) is not None:  # it would be stored in the catalog and every export
        raise InputError(
            source,
            f"the url {redact_url(url)} holds credentials",
            "remove the user info before '@' from the export's urls (credentials belong in a git "
            "credential helper, never in a URL)",
            where=where,
        )
    return url


@lru_cache(maxsize=1 << 16)
def _is_relative_inside(path: str) -> bool:
    """True for a path relative to the repository root that stays inside it (cached:
    every annotation repeats its premise's file)."""
    p = PurePosixPath(path)
    return bool(path) and not p.is_absolute() and ".." not in p.parts and "\\" not in path


def check_relative_path(path: str, source, where: str) -> str:
    if not _is_relative_inside(path):
        raise InputError(
            source,
            f"file path {path!r} escapes the repository",
            "paths must be relative to the repository root, without `..`",
            where=where,
        )
    return path


def check_commit(commit: str, source, where: str | None = None) -> str:
    if not isinstance(commit, str) or not COMMIT_RE.match(commit):
        raise InputError(
            source,
            f"commit {commit!r} is not a commit (expected 40 lowercase hex characters)",
            "give the full git commit hash",
            where=where,
        )
    return commit


def _extra(rec: dict, known: set[str], optional: tuple[str, ...] = ()) -> str | None:
    extra = {k: v for k, v in rec.items() if k not in known}
    absent = [k for k in optional if k not in rec]
    if absent:
        extra[ABSENT] = absent
    return json.dumps(extra, sort_keys=True, ensure_ascii=False) if extra else None


# -- theorem records: a fast whole-file path, and record-by-record checks that name errors --
# docs/leandojo-export.md, "Import: where the time goes". A split file is decoded by
# msgspec straight into the typed records below, which checks every type, every key
# (none missing, none unknown) and every position's range in C. Any failure (or a check
# msgspec cannot express: `end` before `start`, a path leaving the repository, a bad url
# or commit) sends the file to the record-by-record checks, which name the record and field.
_Coordinate = Annotated[int, msgspec.Meta(ge=0, le=MAX_POS)]
_Position = tuple[_Coordinate, _Coordinate]
# gc=False: these records hold only strings, numbers and lists of records, never a cycle,
# so the cycle collector need not track them (it took a fifth of the decoding time).


class _Annotation(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    full_name: str
    def_path: str
    def_pos: _Position | None
    def_end_pos: _Position | None


class _Tactic(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    tactic: str
    annotated_tactic: tuple[str, list[_Annotation]]
    state_before: str
    state_after: str


class _Theorem(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    url: str
    commit: str
    file_path: str
    full_name: str
    theorem_statement: str | None
    start: _Position
    end: _Position
    traced_tactics: list[_Tactic]


class _Identity(msgspec.Struct, gc=False):
    """A theorem record's identity; its other fields are skipped (but still checked as JSON)."""

    url: str
    commit: str
    file_path: str
    full_name: str


_THEOREMS_DECODER = msgspec.json.Decoder(list[_Theorem])
_IDENTITIES_DECODER = msgspec.json.Decoder(list[_Identity])
# What msgspec raises on bad input (ValidationError is a DecodeError; strings that are not
# UTF-8 raise UnicodeDecodeError; deep nesting RecursionError).
_DECODE_ERRORS = (msgspec.DecodeError, UnicodeDecodeError, RecursionError)


def _valid_repo(url: str, commit: str) -> bool:
    """True when `_url` and `check_commit` would accept this pair."""
    return bool(url.strip()) and url_credentials(url) is None and COMMIT_RE.match(commit) is not None


def _identity_ok(rec, valid_repos: set) -> bool:
    """True for a typed record whose identity `_identity` would accept (remembering its
    repository in `valid_repos`)."""
    pair = (rec.url, rec.commit)
    if pair not in valid_repos:
        if not _valid_repo(*pair):
            return False
        valid_repos.add(pair)
    return _is_relative_inside(rec.file_path)


def _theorem_ok(thm: _Theorem) -> bool:
    """The checks of `_theorem` that the typed decoding leaves: positions in order, paths inside."""
    if thm.end < thm.start:
        return False
    for t in thm.traced_tactics:
        for a in t.annotated_tactic[1]:
            if not _is_relative_inside(a.def_path) or (
                a.def_pos is not None and a.def_end_pos is not None and a.def_end_pos < a.def_pos
            ):
                return False
    return True


def _split_fast(data: bytes, bodies: bool, valid_repos: set, theorems: dict) -> list | None:
    """[(identity, record)] of a split file whose records are all plain and valid, else None.

    `bodies`: decode whole theorem records (the first split kind read); otherwise only
    identities (another split kind lists the same theorems: their records were read
    already, and an identity not seen before sends the file to the full checks)."""
    try:
        if bodies:
            recs = _THEOREMS_DECODER.decode(data)
        else:  # skipped fields are not decoded, so check the UTF-8 here
            recs = _IDENTITIES_DECODER.decode(data.decode("utf-8"))
    except _DECODE_ERRORS:
        return None
    items = []
    for r in recs:
        key = (r.url, r.commit, r.file_path, r.full_name)
        if not _identity_ok(r, valid_repos) or (not _theorem_ok(r) if bodies else key not in theorems):
            return None
        items.append((key, r if bodies else None))
    return items


def _split_checked(source: Path, data: bytes, valid_repos: set, theorems: dict, extras: dict):
    """(identity, record) of each record of a split file, checked one by one: the first bad
    one raises an InputError naming it. A record whose identity is in `theorems` already is
    not parsed further (None). Keys the records carry beyond LeanDojo's go to `extras`."""
    records = _load_json(source, data)
    if not isinstance(records, list):
        raise InputError(
            source, f"expected a JSON list of theorems, found {type(records).__name__}", "re-create the export"
        )
    for i, rec in enumerate(records):
        key = _identity_fast(rec, valid_repos) or _identity(rec, source, i)
        valid_repos.add(key[:2])
        thm = None
        if key not in theorems:
            thm, extra, tactic_extras = _theorem_checked(rec, key, source, f"record {i} ({key[3]})")
            if extra is not None or any(e is not None for e in tactic_extras):
                extras[key] = (extra, tactic_extras)
        yield key, thm


def _convert(rec, kind):
    try:
        return msgspec.convert(rec, kind)
    except _DECODE_ERRORS:
        return None


def _theorem_checked(rec, key: tuple, source, where: str) -> tuple[_Theorem, str | None, list]:
    """(record, its `extra`, its tactics' `extra`) of one theorem record, or an InputError."""
    thm = _convert(rec, _Theorem)
    if thm is not None and _theorem_ok(thm):
        return thm, None, [None] * len(thm.traced_tactics)
    return _theorem(rec, key, source, where)


def _tactic_checked(t, source, where: str) -> tuple[_Tactic, str | None]:
    tac = _convert(t, _Tactic)
    if tac is not None and all(
        _is_relative_inside(a.def_path) and (a.def_pos is None or a.def_end_pos is None or a.def_end_pos >= a.def_pos)
        for a in tac.annotated_tactic[1]
    ):
        return tac, None
    return _parse_tactic(t, source, where)


def _parse_tactic(t, source, where: str) -> tuple[_Tactic, str | None]:
    tactic = _need(t, "tactic", str, source, where)
    ann = _need(t, "annotated_tactic", list, source, where)
    if len(ann) != 2 or not isinstance(ann[0], str) or not isinstance(ann[1], list):
        raise InputError(
            source,
            "field `annotated_tactic` should be [text, [premises]]",
            "fix the record or re-create the export",
            where=where,
        )
    annotations = []
    for j, a in enumerate(ann[1]):
        w = f"{where}, annotation {j}"
        annotations.append(
            _Annotation(
                _need(a, "full_name", str, source, w),
                check_relative_path(_need(a, "def_path", str, source, w), source, w),
                *_span(a, "def_pos", "def_end_pos", source, w, nullable=True),
            )
        )
    return (
        _Tactic(
            tactic,
            (ann[0], annotations),
            _need(t, "state_before", str, source, where),
            _need(t, "state_after", str, source, where),
        ),
        _extra(t, TACTIC_KEYS),
    )


def _identity_fast(rec, valid_repos: set) -> tuple | None:
    """(url, commit, file_path, full_name) of a record whose repository was checked
    already, without building error context; None sends it to `_identity`."""
    if type(rec) is not dict:
        return None
    url, commit, path, name = rec.get("url"), rec.get("commit"), rec.get("file_path"), rec.get("full_name")
    if (
        type(url) is str
        and type(commit) is str
        and type(path) is str
        and type(name) is str
        and (url, commit) in valid_repos
        and _is_relative_inside(path)
    ):
        return url, commit, path, name
    return None


def _identity(rec, source, i: int) -> tuple:
    where = f"record {i}"
    full_name = _need(rec, "full_name", str, source, where)
    where = f"record {i} ({full_name})"
    url = _url(rec, source, where)
    commit = check_commit(_need(rec, "commit", str, source, where), source, where)
    file_path = check_relative_path(_need(rec, "file_path", str, source, where), source, where)
    return url, commit, file_path, full_name


def _theorem(rec: dict, key: tuple, source, where: str) -> tuple[_Theorem, str | None, list]:
    tactics = rec.get("traced_tactics") or []
    if not isinstance(tactics, list):
        raise InputError(source, "field `traced_tactics` should be a list", "fix the record", where=where)
    start, end = _span(rec, "start", "end", source, where)
    statement = (
        _need(rec, "theorem_statement", str, source, where, nullable=True) if "theorem_statement" in rec else None
    )
    parsed = [_tactic_checked(t, source, f"{where}, tactic {j}") for j, t in enumerate(tactics)]
    return (
        _Theorem(*key, statement, start, end, [t for t, _ in parsed]),
        _extra(rec, THEOREM_KEYS, optional=("theorem_statement", "traced_tactics")),
        [e for _, e in parsed],
    )


def _read_theorems(root: Path) -> tuple[dict, dict, dict]:
    """The theorem records of the split kinds present: ({identity: record}, in the order
    first read; {identity: (extra, tactics' extras)} of records with keys we do not model;
    {split kind: {identity: split}})."""
    theorems: dict[tuple, _Theorem] = {}
    extras: dict[tuple, tuple] = {}
    split_of: dict[str, dict[tuple, str]] = {}
    valid_repos: set[tuple[str, str]] = set()  # (url, commit) pairs already checked
    for kind in schemas.SPLIT_KINDS:
        kind_dir = root / kind
        if not kind_dir.exists():
            continue
        seen = split_of[kind] = {}
        bodies = len(split_of) == 1  # the first kind read has the records; others, identities
        for split in schemas.SPLITS:
            source = kind_dir / f"{split}.json"
            if not source.exists():
                raise InputError(
                    source, "file is missing", f"a LeanDojo export has {kind}/train.json, val.json and test.json"
                )
            data = _read_bytes(source)
            items = _split_fast(data, bodies, valid_repos, theorems)
            if items is None:
                items = _split_checked(source, data, valid_repos, theorems, extras)
            for i, (key, thm) in enumerate(items):
                if key in seen:
                    raise InputError(
                        source,
                        f"theorem {key[3]} in {key[2]} appears twice in {kind}/",
                        "remove the duplicate record",
                        where=f"record {i} ({key[3]})",
                    )
                seen[key] = split
                if thm is not None and key not in theorems:
                    theorems[key] = thm
    if not split_of:
        raise InputError(
            root,
            "no split folder found (random/ or novel_premises/)",
            "point at the folder of a LeanDojo export (it holds random/ and novel_premises/)",
        )
    return theorems, extras, split_of


def _theorem_tables(
    rid: str,
    keys: list[tuple],
    export_order: list[int],
    theorems: dict,
    extras: dict,
    split_random: list[str],
    split_novel: list[str],
) -> tuple[pa.Table, pa.Table]:
    """The theorems and tactics tables of one repository, built column by column."""
    records = [theorems[k] for k in keys]
    paths, names = [k[2] for k in keys], [k[3] for k in keys]
    counts = [len(r.traced_tactics) for r in records]
    tactics = [t for r in records for t in r.traced_tactics]
    parent = pa.array([i for i, c in enumerate(counts) for _ in range(c)], pa.int64())
    theorem_id = pa.array(theorem_ids(rid, paths, names), pa.string())
    file_path, full_name = pa.array(paths, pa.string()), pa.array(names, pa.string())
    tactic = pa.array([t.tactic for t in tactics], pa.string())
    annotations = [t.annotated_tactic[1] for t in tactics]
    flat = [a for anns in annotations for a in anns]
    annotation = pa.StructArray.from_arrays(
        [
            pa.array([a.full_name for a in flat], pa.string()),
            pa.array([a.def_path for a in flat], pa.string()),
            pa.array([a.def_pos for a in flat], schemas.POS),
            pa.array([a.def_end_pos for a in flat], schemas.POS),
        ],
        fields=list(schemas.ANNOTATION),
    )
    offsets = pa.array(list(accumulate((len(a) for a in annotations), initial=0)), pa.int32())
    theorem_extra = tactic_extra = None
    if extras:
        kept = [extras.get(k, (None, [None] * c)) for k, c in zip(keys, counts)]
        theorem_extra, tactic_extra = [e for e, _ in kept], [e for _, es in kept for e in es]
    has_sorry = pc.is_in(pa.array(range(len(keys)), pa.int64()), value_set=pc.filter(parent, sorry_mask(tactic)))
    theorem_table = pa.Table.from_arrays(
        [
            pa.array([rid] * len(keys), pa.string()),
            theorem_id,
            file_path,
            full_name,
            pa.array([r.theorem_statement for r in records], pa.string()),
            pa.array([r.start for r in records], schemas.POS),
            pa.array([r.end for r in records], schemas.POS),
            pa.array(counts, pa.int64()),
            has_sorry,
            pa.array(split_random, pa.string()),
            pa.array(split_novel, pa.string()),
            pa.array(export_order, pa.int64()),
            pa.array(theorem_extra or [None] * len(keys), pa.string()),
        ],
        schema=schemas.THEOREMS,
    )
    tactic_table = pa.Table.from_arrays(
        [
            pa.array([rid] * len(tactics), pa.string()),
            theorem_id.take(parent),
            file_path.take(parent),
            full_name.take(parent),
            pa.array([j for c in counts for j in range(c)], pa.int64()),
            tactic,
            pa.array([t.annotated_tactic[0] for t in tactics], pa.string()),
            pa.ListArray.from_arrays(offsets, annotation, type=pa.list_(schemas.ANNOTATION)),
            pa.array([t.state_before for t in tactics], pa.string()),
            pa.array([t.state_after for t in tactics], pa.string()),
            pa.array(tactic_extra or [None] * len(tactics), pa.string()),
        ],
        schema=schemas.TACTICS,
    )
    return theorem_table, tactic_table


def read_export(path: str | Path, split_settings: SplitSettings | None = None) -> list[RepoData]:
    """Parse and validate a LeanDojo export; return one RepoData per repository in it."""
    with _gc_paused():
        return _read_export(Path(path), split_settings)


@contextmanager
def _gc_paused():
    """Pause Python's cycle collector: reading an export creates a few hundred thousand
    objects (no cycles among them), and the collector's passes over them took a fifth of
    the reading time (docs/leandojo-export.md). Garbage is still freed by reference counts."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _read_export(root: Path, split_settings: SplitSettings | None) -> list[RepoData]:
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

    # Theorems: one entry per identity, with the split it has in each split kind.
    theorems, extras, split_of = _read_theorems(root)
    if not theorems:
        raise InputError(root, "the export holds no theorems", "export a repository that has theorems")
    if len(split_of) == 2:
        a, b = (seen.keys() for seen in split_of.values())
        if a != b:  # name the first theorem, in reading order, that one kind lacks
            missing = next((k for k in a if k not in b), None) or next(k for k in b if k not in a)
            raise InputError(
                root,
                f"theorem {missing[3]} ({missing[2]}) is in one split kind but not the other",
                "re-create the export: random/ and novel_premises/ must hold the same theorems",
            )

    # Repositories in this export, keyed by (url, commit); each theorem's position in the export.
    by_repo: dict[tuple[str, str], list[tuple]] = defaultdict(list)
    order_of: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i, key in enumerate(theorems):
        by_repo[key[:2]].append(key)
        order_of[key[:2]].append(i)
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
            traced.add(
                check_relative_path(
                    _need(rec, "traced_file_path", str, traced_path, f"line {i + 1}"), traced_path, f"line {i + 1}"
                )
            )
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
                raise InputError(
                    corpus_path,
                    f"field `imports` should hold strings, found {json.dumps(imp)[:80]}",
                    "fix the record or re-create the export",
                    where=w,
                )
            check_relative_path(imp, corpus_path, w)
        if path in seen_files:
            raise InputError(corpus_path, f"file {path} appears twice", "remove the duplicate line", where=where)
        seen_files.add(path)
        repo = owner(path)
        files[repo].append({"path": path, "imports": list(imports), "corpus_order": i, "traced": path in traced})
        for j, p in enumerate(_need(rec, "premises", list, corpus_path, where)):
            w = f"{where}, premise {j}"
            start, end = (
                _span(p, "start", "end", corpus_path, w, nullable=True, optional=True)
                if isinstance(p, dict)
                else (None, None)
            )
            premises[repo].append(
                {
                    "file_path": path,
                    "full_name": _need(p, "full_name", str, corpus_path, w),
                    "code": _need(p, "code", str, corpus_path, w, nullable=True) if "code" in p else None,
                    "kind": _need(p, "kind", str, corpus_path, w, nullable=True) if "kind" in p else None,
                    "start": start,
                    "end": end,
                    "idx": j,
                    "from_annotation": False,
                    "extra": _extra(p, PREMISE_KEYS, optional=("code", "kind", "start", "end")),
                }
            )
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
            for t in thm.traced_tactics:
                for a in t.annotated_tactic[1]:
                    if (a.def_path, a.full_name) in known:
                        continue
                    known.add((a.def_path, a.full_name))
                    repo = (
                        owner(a.def_path) if a.def_path in owner_of_file or _PACKAGE_RE.match(a.def_path) else key[:2]
                    )
                    premises[repo].append(
                        {
                            "file_path": a.def_path,
                            "full_name": a.full_name,
                            "code": None,
                            "kind": None,
                            "start": a.def_pos,
                            "end": a.def_end_pos,
                            "idx": len(premises[repo]),
                            "from_annotation": True,
                            "extra": None,
                        }
                    )

    now = datetime.now(UTC).replace(microsecond=0)
    lean_version = metadata.get("lean_version") or (metadata.get("from_repo") or {}).get("lean_version")
    out = []
    for (url, commit), keys in by_repo.items():
        rid = make_repo_id(url, commit)
        ident = [(url, k[2], k[3]) for k in keys]
        if splits_assigned and "random" in split_of:
            random_split = [split_of["random"][k] for k in keys]
        else:
            random_split = assign_random(ident, settings)
        if splits_assigned and "novel_premises" in split_of:
            novel_split = [split_of["novel_premises"][k] for k in keys]
        else:
            used = [{a.full_name for t in theorems[k].traced_tactics for a in t.annotated_tactic[1]} for k in keys]
            novel_split = assign_novel_premises(ident, used, settings)
        theorem_table, tactic_table = _theorem_tables(
            rid, keys, order_of[url, commit], theorems, extras, random_split, novel_split
        )
        repo_files = [{"repo_id": rid, **f} for f in files.get((url, commit), [])]
        repo_premises = [{"repo_id": rid, **p} for p in premises.get((url, commit), [])]
        split_record = {
            "kept_from_export": [k for k in schemas.SPLIT_KINDS if splits_assigned and k in split_of],
            **settings.model_dump(),
        }
        repository = {
            "repo_id": rid,
            "url": url,
            "commit": commit,
            "name": repo_name(url),
            "lean_version": lean_version if (url, commit) == main else None,
            "source": metadata.get("dojoflow_source", "leandojo_export"),
            "source_path": str(root.resolve()),
            "commit_time": _parse_time(metadata.get("commit_time")) if (url, commit) == main else None,
            "ingested_at": now,
            "split_settings": json.dumps(split_record, sort_keys=True),
            "metadata": json.dumps(metadata, sort_keys=True, ensure_ascii=False) if (url, commit) == main else None,
        }
        out.append(
            RepoData(
                repository=repository,
                files=pa.Table.from_pylist(repo_files, schema=schemas.FILES),
                theorems=theorem_table,
                tactics=tactic_table,
                premises=pa.Table.from_pylist(repo_premises, schema=schemas.PREMISES),
            )
        )
    out.sort(key=lambda d: (d.repository["url"], d.repository["commit"]) != main)
    return out


def _parse_time(value) -> datetime | None:
    if not value:
        return None
    try:
        t = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=UTC)


def import_export(
    store,
    path: str | Path,
    split_settings: SplitSettings | None = None,
    replace: bool = False,
    lock_timeout: float = 0.0,
) -> list:
    """Read, validate, then write every repository of an export. Nothing is written
    unless the whole export is valid and no repository conflicts; all of them appear
    together, in one rename (`Store.add_repositories`)."""
    return import_exports(store, [path], split_settings, replace=replace, lock_timeout=lock_timeout)


def import_exports(
    store,
    paths: list[str | Path],
    split_settings: SplitSettings | None = None,
    replace: bool = False,
    lock_timeout: float = 0.0,
    workers: int | None = None,
) -> list:
    """Import several exports as one change (one process, one commit): all of their
    repositories appear together, or, if any export is invalid or conflicts, none."""
    return store.ingest(read_exports(paths, split_settings, workers), replace=replace, lock_timeout=lock_timeout)


def read_exports(
    paths: list[str | Path], split_settings: SplitSettings | None = None, workers: int | None = None
) -> list[RepoData]:
    """`read_export` of each path, in parallel processes when there are several exports
    and cores to spare; the repositories of all of them, the first export's first.

    A repository held by two exports (a shared dependency) is kept once when both hold
    the same content, and is an error naming both exports when they differ.
    """
    paths = [Path(p) for p in paths]
    if not paths:
        raise InputError("PATH", "no export given", "name at least one LeanDojo export folder")
    if workers is None:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        # A worker costs a process start and its imports (about a second of CPU) and sends its
        # tables back: worth it for big exports on machines with cores to spare. On 2 cores it
        # measured slower than one process (benchmarks/README.md), so it needs 4 or more.
        big = sum(_split_bytes(p) for p in paths) >= PARALLEL_IMPORT_BYTES
        workers = min(len(paths), cores) if big and cores >= PARALLEL_IMPORT_CORES else 1
    if workers > 1 and len(paths) > 1:
        from concurrent.futures import ProcessPoolExecutor
        from multiprocessing import get_context

        # spawn, not fork: the parent may hold DuckDB's and Arrow's threads
        with ProcessPoolExecutor(workers, mp_context=get_context("spawn")) as pool:
            outcomes = list(pool.map(_read_export_outcome, paths, [split_settings] * len(paths)))
    else:
        outcomes = [_read_export_outcome(p, split_settings) for p in paths]
    out: dict[str, tuple[RepoData, Path]] = {}
    for path, outcome in zip(paths, outcomes):
        if isinstance(outcome, tuple):  # an InputError, re-raised as the worker found it
            raise InputError(*outcome)
        for data in outcome:
            if data.repo_id not in out:
                out[data.repo_id] = (data, path)
            elif out[data.repo_id][0].content_hash() != data.content_hash():
                raise InputError(
                    path,
                    f"repository {data.repo_id} is also in {out[data.repo_id][1]}, with different content",
                    "import the two exports separately (with --replace for the one that should win)",
                )
    return [data for data, _ in out.values()]


PARALLEL_IMPORT_BYTES = 32 * 2**20
PARALLEL_IMPORT_CORES = 4


def _split_bytes(root: Path) -> int:
    return sum(f.stat().st_size for f in root.glob("*/*.json") if f.is_file()) if root.is_dir() else 0


def _read_export_outcome(path: Path, split_settings: SplitSettings | None):
    """read_export's repositories, or its InputError's fields (a worker's exception
    would reach the parent without them)."""
    try:
        return read_export(path, split_settings)
    except InputError as e:
        return (e.source, e.problem, e.fix, e.where)


# -- writing ------------------------------------------------------------------------
# Export streams from the store's Parquet files to JSON with DuckDB (docs/leandojo-export.md):
# DuckDB builds each record's JSON text in C++, one repository at a time, and Python
# only routes those strings into the six split files. Records carrying keys we do not
# model (`extra`) are completed in Python; there are few of them.
_TACTICS_SQL = """
SELECT theorem_id,
       list(json_object('tactic', tactic, 'annotated_tactic', json_array(annotated_tactic, annotations),
                        'state_before', state_before, 'state_after', state_after) ORDER BY idx) AS tactics,
       CASE WHEN bool_or(extra IS NOT NULL) THEN list(extra ORDER BY idx) END AS tactic_extras
FROM read_parquet($tactics) GROUP BY theorem_id
"""
_THEOREMS_SQL = f"""
WITH tac AS ({_TACTICS_SQL})
SELECT th.split_random, th.split_novel_premises,
       json_object('url', $url, 'commit', $commit, 'file_path', th.file_path, 'full_name', th.full_name,
                   'theorem_statement', th.theorem_statement, 'start', th.start, 'end', th."end",
                   'traced_tactics', coalesce(to_json(tac.tactics), '[]'::JSON))::VARCHAR AS rec,
       th.extra, tac.tactic_extras
FROM read_parquet($theorems) th LEFT JOIN tac USING (theorem_id)
ORDER BY coalesce(th.export_order, 0), th.file_path, th.full_name
"""
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
_BATCH_ROWS = 2048


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

    con = duckdb.connect(
        config={"autoinstall_known_extensions": False, "autoload_known_extensions": False, "threads": 1}
    )
    return con


def _corpus_order(files: pa.Table, repo_rank: dict[str, int]) -> tuple[list, list, list]:
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
        stack = [(path, iter(first[path][1]))]
        if path in done:
            continue
        done.add(path)
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
    """Refuse to export into the store's own folders (or around them)."""
    target, root = out.resolve(), store.root.resolve()
    if target == root or root in target.parents or target in root.parents:
        raise InputError(
            out,
            f"is inside the store's own folders ({root})",
            "export to a folder outside the store, e.g. ./leandojo-export",
        )


def export_metadata(repos: list[dict]) -> dict:
    """metadata.json of an export of `repos` (in export order).

    The source export's own fields (dataset_name, from_repo, leandojo_version, ...)
    are kept from the first repository that came from an export with a metadata.json,
    and every repository's are listed under `repositories`. The same store gives the
    same bytes: `creation_time` is the source's, else the newest ingestion time.
    """
    sources = [json.loads(r["metadata"]) if r.get("metadata") else {} for r in repos]
    main_at = next((i for i, m in enumerate(sources) if m), 0)
    main = repos[main_at]
    meta = {k: v for k, v in sources[main_at].items() if k != "dojoflow_splits"}
    from_repo = meta.get("from_repo") if isinstance(meta.get("from_repo"), dict) else {}
    created = meta.get("creation_time") if len(repos) == 1 else None
    meta.update(
        {
            "creation_time": created or max(r["ingested_at"] for r in repos).isoformat(timespec="seconds"),
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
    return meta


def write_export(store, out_dir: str | Path, repo_ids: list[str]) -> Path:
    """Write `repo_ids` in the LeanDojo layout at `out_dir` (atomically, as one folder).

    Streams: no split is ever held whole in Python objects (docs/leandojo-export.md).
    """
    out = Path(out_dir)
    check_export_target(store, out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise InputError(out, "exists and is not an empty folder", "choose a new folder for the export")
    if not repo_ids:
        raise InputError("--repo", "no repositories selected", "name at least one repository, or none to export all")
    repo_ids = list(dict.fromkeys(repo_ids))
    folders = store.folders()
    missing = [r for r in repo_ids if r not in folders]
    if missing:
        raise InputError(", ".join(missing), "no such repository in the store", "run `dojoflow repos` to list them")
    repos = [_read_repository_at(folders[r]) for r in repo_ids]
    con = _duckdb()
    num_theorems = 0
    with atomic.atomic_path(out) as tmp:
        tmp.mkdir(parents=True)
        splits = {}
        for kind in schemas.SPLIT_KINDS:
            (tmp / kind).mkdir()
            for split in schemas.SPLITS:
                f = open(tmp / kind / f"{split}.json", "w", encoding="utf-8")
                f.write("[")
                splits[kind, split] = [f, ""]
        try:
            for rid, repo in zip(repo_ids, repos):
                rel = con.sql(
                    _THEOREMS_SQL,
                    params={
                        "url": repo["url"],
                        "commit": repo["commit"],
                        "theorems": str(folders[rid] / "theorems.parquet"),
                        "tactics": str(folders[rid] / "tactics.parquet"),
                    },
                )
                for batch in rel.to_arrow_reader(_BATCH_ROWS):
                    recs = batch.column("rec").to_pylist()
                    extras, tactic_extras = batch.column("extra"), batch.column("tactic_extras")
                    if extras.null_count < len(extras) or tactic_extras.null_count < len(tactic_extras):
                        recs = [
                            r if e is None and te is None else _with_extra(r, e, "traced_tactics", te)
                            for r, e, te in zip(recs, extras.to_pylist(), tactic_extras.to_pylist())
                        ]
                    num_theorems += len(recs)
                    for kind in schemas.SPLIT_KINDS:
                        by_split = defaultdict(list)
                        for rec, split in zip(recs, batch.column(f"split_{kind}").to_pylist()):
                            by_split[split].append(rec)
                        for split, chunk in by_split.items():
                            slot = splits[kind, split]
                            slot[0].write(slot[1] + "\n" + ",\n".join(chunk))
                            slot[1] = ","
        finally:
            for f, _ in splits.values():
                f.close()
        for (kind, split), (_, sep) in splits.items():
            with open(tmp / kind / f"{split}.json", "a", encoding="utf-8") as f:
                f.write("\n]\n" if sep else "]\n")
        _write_corpus(con, tmp, [folders[r] for r in repo_ids], {r: i for i, r in enumerate(repo_ids)})
        meta = export_metadata(repos)
        meta["num_theorems"] = num_theorems
        (tmp / "metadata.json").write_text(json.dumps(meta, indent=2, ensure_ascii=False), encoding="utf-8")
    con.close()
    return out


def _write_corpus(con, tmp: Path, folders: list[Path], repo_rank: dict[str, int]) -> None:
    """corpus.jsonl (each file once, imports first) and traced_files.jsonl."""
    files = con.sql(
        "SELECT repo_id, path, imports, corpus_order, traced FROM read_parquet($f)",
        params={"f": [str(f / "files.parquet") for f in folders]},
    ).to_arrow_table()
    in_corpus = files.filter(pc.is_valid(files["corpus_order"]))
    if in_corpus.num_rows:
        order = _corpus_order(in_corpus, repo_rank)  # passed as lists: registering an Arrow table costs ~30 MB
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
    traced = sorted(
        zip(files["corpus_order"].to_pylist(), files["path"].to_pylist(), files["traced"].to_pylist()),
        key=lambda t: (t[0] is None, t[0] or 0, t[1]),
    )
    paths = list(dict.fromkeys(p for _, p, is_traced in traced if is_traced))
    if paths:
        with open(tmp / "traced_files.jsonl", "w", encoding="utf-8") as f:
            f.writelines(json.dumps({"traced_file_path": p}, ensure_ascii=False) + "\n" for p in paths)


def _read_repository_at(folder: Path) -> dict:
    from .store import _read_repository

    return _read_repository(folder)
