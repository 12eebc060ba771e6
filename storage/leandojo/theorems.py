"""The theorem records of an export's split files: a fast whole-file path, and
record-by-record checks that name the first bad record.

docs/leandojo-export.md, "Import: where the time goes". msgspec decodes a split file
into typed records and checks types, keys and position ranges in C; the checks it
cannot express (`end` before `start`, a path leaving the repository, a url, a commit,
a name or statement that is not what Lean would read as one) run here, and any
failure sends the file to the record-by-record checks, which name the record and field.
"""

from __future__ import annotations

from pathlib import Path

from .. import schemas
from ..errors import InputError
from ..lean_text import is_statement, tactic_problem
from . import fields
from .files import load_json, present, read_bytes
from .records import (
    DECODE_ERRORS,
    IDENTITIES_DECODER,
    TACTIC_KEYS,
    THEOREM_KEYS,
    THEOREMS_DECODER,
    Annotation,
    Tactic,
    Theorem,
    TheoremKey,
    convert,
)


class SplitsRead:
    """What the split files held: each theorem's record once (in the order first read),
    the keys records carry beyond LeanDojo's, and each split kind's split of each theorem."""

    def __init__(self):
        self.theorems: dict[TheoremKey, Theorem] = {}
        self.extras: dict[TheoremKey, tuple] = {}  # key: (extra, tactics' extras)
        self.split_of: dict[str, dict[TheoremKey, str]] = {}
        self.valid_repos: set[tuple[str, str]] = set()  # (url, commit) pairs already checked
        self.declared: list[tuple[str, str]] = []  # the (url, commit) pairs metadata.json declares


def _identity_ok(rec, valid_repos: set, declared: list) -> bool:
    """True for a typed record whose identity `fields.identity` would accept, at a repository
    metadata.json does not contradict (remembering it in `valid_repos`)."""
    pair = (rec.url, rec.commit)
    if pair not in valid_repos:
        if not fields.valid_repo(*pair) or fields.repo_problem(pair, declared) is not None:
            return False
        valid_repos.add(pair)
    return fields.is_relative_inside(rec.file_path) and fields.is_theorem_name(rec.full_name)


def _annotations_ok(annotations: list[Annotation]) -> bool:
    """Paths inside, positions in order (plain loops: this runs for every annotation)."""
    inside = fields.is_relative_inside
    for a in annotations:
        if not inside(a.def_path) or (
            a.def_pos is not None and a.def_end_pos is not None and a.def_end_pos < a.def_pos
        ):
            return False
    return True


def _theorem_ok(thm: Theorem) -> bool:
    """The checks of a theorem that the typed decoding leaves: positions in order, paths
    inside, a statement that is one signature."""
    if thm.end < thm.start or not is_statement(thm.theorem_statement, thm.full_name):
        return False
    inside = fields.is_relative_inside
    for t in thm.traced_tactics:  # `_annotations_ok` inlined: this runs for every annotation
        if tactic_problem(t.tactic) is not None:
            return False
        for a in t.annotated_tactic[1]:
            if not inside(a.def_path) or (
                a.def_pos is not None and a.def_end_pos is not None and a.def_end_pos < a.def_pos
            ):
                return False
    return True


def split_fast(data: bytes, bodies: bool, valid_repos: set, theorems: dict, declared: list = ()) -> list | None:
    """[(identity, record)] of a split file whose records are all plain and valid, else None.

    `bodies`: decode whole theorem records (the first split kind read); otherwise only
    identities (another split kind lists the same theorems: their records were read
    already, and an identity not seen before sends the file to the full checks)."""
    try:
        if bodies:
            recs = THEOREMS_DECODER.decode(data)
        else:  # skipped fields are not decoded, so check the UTF-8 here
            recs = IDENTITIES_DECODER.decode(data.decode("utf-8"))
    except DECODE_ERRORS:
        return None
    items = []
    for r in recs:
        key = r.key()
        if not _identity_ok(r, valid_repos, declared):
            return None
        if not _theorem_ok(r) if bodies else key not in theorems or not r.same_as(theorems[key]):
            return None
        items.append((key, r if bodies else None))
    return items


def split_checked(source: Path, data: bytes, read: SplitsRead, first: int = 0):
    """(identity, record) of each record of a split file, checked one by one: the first bad
    one raises an InputError naming it. A record whose identity was read already is not
    parsed further (None). Keys the records carry beyond LeanDojo's go to `read.extras`."""
    records = load_json(source, data)
    if not isinstance(records, list):
        raise InputError(
            source, f"expected a JSON list of theorems, found {type(records).__name__}", "re-create the export"
        )
    for i, rec in enumerate(records, first):
        key = _identity_fast(rec, read.valid_repos)
        if key is None:
            key = fields.identity(rec, source, i)
            fields.check_repo(key, read.declared, source, f"record {i} ({key.full_name})")
        read.valid_repos.add(key.repo)
        thm = None
        if key in read.theorems and len(read.split_of) > 1:  # another split kind: the same record
            _check_same(rec, read.theorems[key], source, f"record {i} ({key.full_name})", next(iter(read.split_of)))
        if key not in read.theorems:
            thm, extra, tactic_extras = _theorem_checked(rec, key, source, f"record {i} ({key.full_name})")
            if extra is not None or any(e is not None for e in tactic_extras):
                read.extras[key] = (extra, tactic_extras)
        yield key, thm


_COMPARED = ("theorem_statement", "start", "end")


def _check_same(rec, thm: Theorem, source, where: str, first_kind: str) -> None:
    """Refuse a record of the second split kind read that differs from the first kind's record of
    the same theorem (one of the two would be silently dropped, issue 26 C)."""
    for name in _COMPARED:
        value, kept = rec.get(name) if isinstance(rec, dict) else None, getattr(thm, name)
        if (list(kept) if isinstance(kept, tuple) else kept) != value:
            raise InputError(
                source,
                f"field `{name}` differs from the same theorem's record in {first_kind}/",
                "re-create the export: both split kinds hold the same theorem records",
                where=where,
            )


def _identity_fast(rec, valid_repos: set) -> TheoremKey | None:
    """The identity of a record whose repository was checked already, without building
    error context; None sends it to `fields.identity`."""
    if type(rec) is not dict:
        return None
    url, commit, path, name = rec.get("url"), rec.get("commit"), rec.get("file_path"), rec.get("full_name")
    if (
        type(url) is str
        and type(commit) is str
        and type(path) is str
        and type(name) is str
        and (url, commit) in valid_repos
        and fields.is_relative_inside(path)
        and fields.is_theorem_name(name)
    ):
        return TheoremKey(url, commit, path, name)
    return None


def _theorem_checked(rec, key: TheoremKey, source, where: str) -> tuple[Theorem, str | None, list]:
    """(record, its `extra`, its tactics' `extra`) of one theorem record, or an InputError."""
    thm = convert(rec, Theorem)
    if thm is not None and _theorem_ok(thm):
        return thm, None, [None] * len(thm.traced_tactics)
    tactics = rec.get("traced_tactics") or []
    if not isinstance(tactics, list):
        raise InputError(source, "field `traced_tactics` should be a list", "fix the record", where=where)
    start, end = fields.span(rec, "start", "end", source, where)
    statement = (
        fields.need(rec, "theorem_statement", str, source, where, nullable=True) if "theorem_statement" in rec else None
    )
    fields.check_statement(statement, key.full_name, source, where)
    parsed = [_tactic_checked(t, source, f"{where}, tactic {j}") for j, t in enumerate(tactics)]
    return (
        Theorem(*key, statement, start, end, [t for t, _ in parsed]),
        fields.extra(rec, THEOREM_KEYS, optional=("theorem_statement", "traced_tactics")),
        [e for _, e in parsed],
    )


def _tactic_checked(t, source, where: str) -> tuple[Tactic, str | None]:
    tac = convert(t, Tactic)
    if tac is not None and _annotations_ok(tac.annotated_tactic[1]) and tactic_problem(tac.tactic) is None:
        return tac, None
    tactic = fields.check_tactic(fields.need(t, "tactic", str, source, where), source, where)
    ann = fields.need(t, "annotated_tactic", list, source, where)
    if len(ann) != 2 or not isinstance(ann[0], str) or not isinstance(ann[1], list):
        raise InputError(
            source,
            "field `annotated_tactic` should be [text, [premises]]",
            "fix the record or re-create the export",
            where=where,
        )
    annotations = [_annotation(a, source, f"{where}, annotation {j}") for j, a in enumerate(ann[1])]
    return (
        Tactic(
            tactic,
            (ann[0], annotations),
            fields.need(t, "state_before", str, source, where),
            fields.need(t, "state_after", str, source, where),
        ),
        fields.extra(t, TACTIC_KEYS),
    )


def _annotation(a, source, where: str) -> Annotation:
    return Annotation(
        fields.need(a, "full_name", str, source, where),
        fields.check_relative_path(fields.need(a, "def_path", str, source, where), source, where),
        *fields.span(a, "def_pos", "def_end_pos", source, where, nullable=True),
    )


def read_splits(root: Path, declared: list[tuple[str, str]] = ()) -> SplitsRead:
    """The theorem records of the split kinds present in the export at `root` (`declared`:
    the repositories metadata.json declares, which no record may contradict)."""
    read = SplitsRead()
    read.declared = list(declared)
    for kind in schemas.SPLIT_KINDS:
        if not present(root / kind):
            continue
        read.split_of[kind] = {}
        bodies = len(read.split_of) == 1  # the first kind read has the records; others, identities
        for split in schemas.SPLITS:
            _read_split(root, kind, split, bodies, read)
    if not read.split_of:
        raise InputError(
            root,
            "no split folder found (random/ or novel_premises/)",
            "point at the folder of a LeanDojo export (it holds random/ and novel_premises/)",
        )
    return read


def _read_split(root: Path, kind: str, split: str, bodies: bool, read: SplitsRead) -> None:
    """Read `kind/split.json` into `read`: its theorems' records and their split."""
    source = root / kind / f"{split}.json"
    if not present(source):
        raise InputError(source, "file is missing", f"a LeanDojo export has {kind}/train.json, val.json and test.json")
    data = read_bytes(source, root)
    items = split_fast(data, bodies, read.valid_repos, read.theorems, read.declared)
    if items is None:
        items = split_checked(source, data, read)
    seen = read.split_of[kind]
    for i, (key, thm) in enumerate(items):
        if key in seen:
            raise InputError(
                source,
                f"theorem {key.full_name} in {key.file_path} appears twice in {kind}/",
                "remove the duplicate record",
                where=f"record {i} ({key.full_name})",
            )
        seen[key] = split
        if thm is not None and key not in read.theorems:
            read.theorems[key] = thm
