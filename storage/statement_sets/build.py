"""From records read out of a file to a checked set table: every row's statement, header, split and
claimed proof checked, ids computed, nothing written (storage/statement_sets/sets.py writes).

A record is a dict: name, statement, header, split (or None), informal, proof (or None), source,
lean_version, mathlib_version, row (its position in the file), extra (dict). Each problem is an
InputError naming the file, the row and the field (docs/bad-input.md): the first one found stops
the import before anything is written.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pyarrow as pa

from .. import schemas
from ..contamination import fingerprint
from ..errors import InputError
from ..ids import stable_hash
from ..lean_text import control_problem
from ..splits import SplitSettings
from .identity import (
    SPLIT_NAMES,
    import_problem,
    is_sorry_body,
    separate_header,
    split_of,
    split_statement,
    statement_id,
    statement_without_tail,
)


@dataclass(frozen=True)
class BuildOptions:
    """What the set's format asks of each row (presets.py sets these per format)."""

    needs_assign: bool = False  # the statement must end in `:=` (DeepSeek-style `formal_statement`)
    needs_sorry: bool = False  # the statement comes with a `sorry` proof (PutnamBench's files)
    extra_import_roots: tuple[str, ...] = ()
    split_settings: SplitSettings = field(default_factory=SplitSettings)
    default_split: str | None = None  # a benchmark set's rows without a split of their own are `test`


def _fail(path, row, fieldname, problem, fix):
    raise InputError(path, problem, fix, where=f"row {row}, field `{fieldname}`")


def _statement(rec: dict, path, fields: dict, opts: BuildOptions) -> tuple[str, str | None]:
    """(canonical statement ending in `:=`, the body the statement text carried, if any)."""
    text = rec["statement"]
    row, f = rec["row"], fields["statement"]
    if not isinstance(text, str) or not text.strip():
        _fail(path, row, f, "is empty", "give every row a formal statement")
    problem = control_problem(text, lines=True)
    if problem:
        _fail(path, row, f, problem, "remove it: Lean source is text")
    parts = split_statement(text)
    if parts is None:
        if opts.needs_assign or opts.needs_sorry:
            need = "`:= sorry`" if opts.needs_sorry else "`:=` (or `:= by`)"
            _fail(path, row, f, f"does not end in {need} as this format's statements do", "give the whole statement")
        return text.strip() + " :=", None
    statement, body = parts
    if opts.needs_sorry and not is_sorry_body(body):
        _fail(path, row, f, "has no `sorry` proof as this format's statements do", "end it in `:= sorry`")
    if body and is_sorry_body(body):
        body = ""
    return statement_without_tail(statement), body or None


def _proof(rec: dict, statement: str, path, fields: dict) -> str | None:
    """The claimed proof's body; a proof given as a whole declaration must state the row's statement."""
    proof = rec.get("proof")
    if proof is None or not str(proof).strip():
        return None
    parts = split_statement(proof) if any(w in proof for w in ("theorem", "lemma")) else None
    if parts is None:
        return proof.strip()
    stated, body = parts
    decl = _declaration(stated)
    if fingerprint(decl) != fingerprint(_declaration(statement)):
        _fail(
            path,
            rec["row"],
            fields.get("proof", "proof"),
            "proves another statement than its row's",
            "give the proof of the row's statement (or fix the row's statement)",
        )
    return None if not body or is_sorry_body(body) else body


def _declaration(text: str) -> str:
    """The declaration of `text` from its keyword on (a header or docstring before it dropped)."""
    return separate_header(text)[1]


def _split(rec: dict, sid: str, path, fields: dict, opts: BuildOptions) -> tuple[str, str]:
    given = rec.get("split")
    if given is None or given == "":
        if opts.default_split:
            return opts.default_split, "benchmark"
        return split_of(sid, opts.split_settings), "fingerprint"
    split = SPLIT_NAMES.get(str(given).strip().lower())
    if split is None:
        _fail(path, rec["row"], fields.get("split", "split"), f"is {given!r}", "use train, valid/val or test")
    return split, "set"


def build_table(records, path, fields: dict, set_name: str, opts: BuildOptions) -> tuple[pa.Table, dict]:
    """(the set's table, counts) from records; InputError at the first bad row."""
    cols: dict[str, list] = {f.name: [] for f in schemas.STATEMENTS}
    by_name: dict[str, tuple[str, int]] = {}
    seen_ids: set[str] = set()
    dropped = 0
    for rec in records:
        statement, body = _statement(rec, path, fields, opts)
        header = rec.get("header") or ""
        problem = import_problem(header, opts.extra_import_roots)
        if problem:
            _fail(path, rec["row"], fields.get("header", "header"), problem, "import Lean 4 modules the toolchain has")
        fp = fingerprint(statement)
        sid = statement_id(statement, header, fp)
        name = rec["name"]
        if name in by_name:
            first_sid, first_row = by_name[name]
            if first_sid != sid:
                _fail(
                    path,
                    rec["row"],
                    fields.get("name", "name"),
                    f"names `{name}` as row {first_row} does, with another statement",
                    "give each statement its own name",
                )
        by_name.setdefault(name, (sid, rec["row"]))
        if sid in seen_ids:
            dropped += 1  # the same theorem twice in one set: kept once
            continue
        seen_ids.add(sid)
        proof = _proof(rec, statement, path, fields) or body
        split, split_source = _split(rec, sid, path, fields, opts)
        extra = rec.get("extra")
        values = {
            "set_name": set_name,
            "statement_id": sid,
            "fingerprint": fp,
            "name": name,
            "split": split,
            "split_source": split_source,
            "header": header,
            "statement": statement,
            "informal": rec.get("informal") or None,
            "claimed_proof": proof,
            "source": rec.get("source"),
            "lean_version": rec.get("lean_version"),
            "mathlib_version": rec.get("mathlib_version"),
            "row": rec["row"],
            "extra": json.dumps(extra, sort_keys=True, default=str, ensure_ascii=False) if extra else None,
        }
        for k, v in values.items():
            cols[k].append(v)
    table = pa.table(cols, schema=schemas.STATEMENTS)
    if table.num_rows == 0:
        raise InputError(path, "holds no statements", "give a file with at least one row")
    return table, {"duplicates_dropped": dropped}


def content_hash(table: pa.Table) -> str:
    """The set's content: its statements, headers, names, splits and claimed proofs, in order."""
    keys = ("statement_id", "name", "split", "claimed_proof", "informal")
    return stable_hash([table.column(k).to_pylist() for k in keys], 32)
