"""Arrow schemas of the dataset store: the one place the on-disk format is declared.

Every table carries `repo_id`; one repository at one commit is one partition
(a folder `data/<repo_id>/` holding one Parquet file per table). Positions are
(line, column) pairs as LeanDojo writes them. Bump FORMAT_VERSION on any change to
the store's format (these schemas, the layout in storage/store.py, the catalog's
tables) and register a one-step migration in `storage/migrations.py`.

Versions:
  1  first release.
  2  the catalog's `metrics` keeps every run (run_id joins its key); repositories
     are listed in REPOSITORIES.json, the commit record of every import.
"""

from __future__ import annotations

import pyarrow as pa

FORMAT_VERSION = 2

SPLIT_KINDS = ("random", "novel_premises")
SPLITS = ("train", "val", "test")

POS = pa.list_(pa.int64())  # [line, column], exactly as LeanDojo writes it

# The columns that say which repository, theorem and tactic a row is about, declared once.
REPO_ID = pa.field("repo_id", pa.string(), nullable=False)  # every table's: the repository (its partition)
THEOREM_KEY = [
    REPO_ID,
    pa.field("theorem_id", pa.string(), nullable=False),  # hash of (repo_id, file_path, full_name)
    pa.field("file_path", pa.string(), nullable=False),
    pa.field("full_name", pa.string(), nullable=False),
]
TACTIC_KEY = [*THEOREM_KEY, pa.field("idx", pa.int64(), nullable=False)]  # idx: position in the proof, from 0

REPOSITORIES = pa.schema(
    [
        REPO_ID,
        pa.field("url", pa.string(), nullable=False),
        pa.field("commit", pa.string(), nullable=False),
        pa.field("name", pa.string(), nullable=False),
        pa.field("lean_version", pa.string()),
        pa.field("source", pa.string(), nullable=False),  # "leandojo_export" | "trace"
        pa.field("source_path", pa.string()),
        pa.field("commit_time", pa.timestamp("s", tz="UTC")),
        pa.field("ingested_at", pa.timestamp("s", tz="UTC"), nullable=False),
        pa.field("content_hash", pa.string(), nullable=False),
        pa.field("split_settings", pa.string(), nullable=False),  # JSON
        pa.field("metadata", pa.string()),  # JSON: the export's metadata.json, verbatim
        pa.field("format_version", pa.int32(), nullable=False),
    ]
)

FILES = pa.schema(
    [
        REPO_ID,
        pa.field("path", pa.string(), nullable=False),
        pa.field("imports", pa.list_(pa.string()), nullable=False),
        pa.field("corpus_order", pa.int64()),  # position in corpus.jsonl; null if absent
        pa.field("traced", pa.bool_(), nullable=False),  # listed in traced_files.jsonl
    ]
)

THEOREMS = pa.schema(
    [
        *THEOREM_KEY,
        pa.field("theorem_statement", pa.string()),
        pa.field("start", POS, nullable=False),
        pa.field("end", POS, nullable=False),
        pa.field("num_tactics", pa.int64(), nullable=False),
        pa.field("has_sorry", pa.bool_(), nullable=False),
        pa.field("split_random", pa.string(), nullable=False),
        pa.field("split_novel_premises", pa.string(), nullable=False),
        pa.field("export_order", pa.int64()),  # position in its split file, to export in order
        pa.field("extra", pa.string()),  # JSON of keys we do not model, kept for lossless export
    ]
)

ANNOTATION = pa.struct(
    [
        pa.field("full_name", pa.string()),
        pa.field("def_path", pa.string()),
        pa.field("def_pos", POS),
        pa.field("def_end_pos", POS),
    ]
)

TACTICS = pa.schema(
    [
        *TACTIC_KEY,
        pa.field("tactic", pa.string(), nullable=False),
        pa.field("annotated_tactic", pa.string(), nullable=False),
        pa.field("annotations", pa.list_(ANNOTATION), nullable=False),
        pa.field("state_before", pa.string(), nullable=False),
        pa.field("state_after", pa.string(), nullable=False),
        pa.field("extra", pa.string()),
    ]
)

PREMISES = pa.schema(
    [
        REPO_ID,
        pa.field("file_path", pa.string(), nullable=False),
        pa.field("full_name", pa.string(), nullable=False),
        pa.field("code", pa.string()),
        pa.field("kind", pa.string()),
        pa.field("start", POS),
        pa.field("end", POS),
        pa.field("idx", pa.int64(), nullable=False),  # position within its file
        # True when the premise is known only from a tactic annotation (no corpus.jsonl entry).
        pa.field("from_annotation", pa.bool_(), nullable=False),
        pa.field("extra", pa.string()),
    ]
)

TABLES: dict[str, pa.Schema] = {
    "repositories": REPOSITORIES,
    "files": FILES,
    "theorems": THEOREMS,
    "tactics": TACTICS,
    "premises": PREMISES,
}

# Rows of a snapshot: one per traced tactic used for training/evaluation.
SNAPSHOT_TACTICS = pa.schema(
    [
        *TACTIC_KEY,
        pa.field("num_tactics", pa.int64(), nullable=False),
        pa.field("state_before", pa.string(), nullable=False),
        pa.field("tactic", pa.string(), nullable=False),
        pa.field("state_after", pa.string(), nullable=False),
        pa.field("annotated_tactic", pa.string(), nullable=False),
        pa.field("annotations", pa.list_(ANNOTATION), nullable=False),
    ]
)


def empty_table(name: str) -> pa.Table:
    return TABLES[name].empty_table()


# One statement set's rows (storage/statement_sets/): `<store>/statements/<name>@<hash>/statements.parquet`.
# `statement` ends in `:=` (the canonical form: a trailing `by` is the format, not a body); a proof
# shipped with the set is `claimed_proof` (the text after `:=`) until a verdict accepts it.
STATEMENTS = pa.schema(
    [
        pa.field("set_name", pa.string(), nullable=False),
        pa.field("statement_id", pa.string(), nullable=False),  # fingerprint + normalised header (identity.py)
        pa.field("fingerprint", pa.string(), nullable=False),  # the contamination gate's (contamination.py)
        pa.field("name", pa.string(), nullable=False),
        pa.field("split", pa.string(), nullable=False),  # train | val | test
        # "set" (its own) | "fingerprint" | "benchmark" (a benchmark set's rows without one: test)
        pa.field("split_source", pa.string(), nullable=False),
        pa.field("header", pa.string(), nullable=False),
        pa.field("statement", pa.string(), nullable=False),
        pa.field("informal", pa.string()),
        pa.field("claimed_proof", pa.string()),
        pa.field("source", pa.string()),
        pa.field("lean_version", pa.string()),
        pa.field("mathlib_version", pa.string()),
        pa.field("row", pa.int64(), nullable=False),  # position in the file it was read from, from 0
        pa.field("extra", pa.string()),  # JSON of the columns no mapping names, kept verbatim
    ]
)
