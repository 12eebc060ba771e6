"""Progress datasets imported from JSONL into the store, added to every step's training rows.

`dojoflow import-progress FILE.jsonl --name NAME` reads LeanDojo-v2's ProgressTrainer
format (one `{goal, prefix, tactic, steps_remaining}` object per line, see
`tasks.progress.data.read_progress_jsonl`), checks every line (a bad one names the file,
the line and the field, and nothing is written), and writes the rows atomically to
`<store>/progress/NAME.parquet` (`<home>/store/progress/NAME.parquet`). A config then
lists NAME in `trainers.progress.extra_datasets`, and `train_progress` adds those rows
to the snapshot's train rows at every curriculum step.

Names are immutable: importing other content under an existing name is refused, and
importing the same content again does nothing. A training step is cached by its
config, which holds the name, so the rows behind a name must never change.

    python -c "from tasks.progress.imported import import_progress_jsonl as f; print(f('rows.jsonl', '.dojoflow/store', 'seed'))"
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pyarrow as pa

from storage.atomic import remove_orphans, write_parquet
from storage.errors import InputError

from .data import ProgressExample, read_progress_jsonl

PROGRESS_DIR = "progress"
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$"
_NAME_RE = re.compile(NAME_PATTERN)

SCHEMA = pa.schema(
    [
        pa.field("goal", pa.string(), nullable=False),
        pa.field("prefix", pa.string(), nullable=False),
        pa.field("tactic", pa.string(), nullable=False),
        pa.field("steps_remaining", pa.int64(), nullable=False),
        pa.field("repo_id", pa.string()),
        pa.field("theorem_id", pa.string()),
        pa.field("idx", pa.int64()),
    ]
)


def check_name(name: str, source: str = "--name") -> str:
    """`name` if it is a valid dataset name (letters, digits, `_.-`, not starting with a symbol)."""
    if (
        not isinstance(name, str) or not _NAME_RE.fullmatch(name) or name.endswith(".parquet")
    ):  # `$` would let "x\n" through
        raise InputError(
            source,
            f"{name!r} is not a valid progress dataset name",
            "Use 1-100 letters, digits, '_', '.' or '-', starting with a letter or digit, without the .parquet suffix.",
        )
    return name


def dataset_path(store_root: str | Path, name: str) -> Path:
    """`<store_root>/progress/<name>.parquet`."""
    return Path(store_root) / PROGRESS_DIR / f"{check_name(name)}.parquet"


def to_table(examples: list[ProgressExample]) -> pa.Table:
    return pa.Table.from_pylist(
        [
            {
                "goal": e.goal,
                "prefix": e.prefix,
                "tactic": e.tactic,
                "steps_remaining": e.steps_remaining,
                "repo_id": e.repo_id,
                "theorem_id": e.theorem_id,
                "idx": e.idx,
            }
            for e in examples
        ],
        schema=SCHEMA,
    )


def _rows_digest(examples: list[ProgressExample]) -> str:
    h = hashlib.sha256()
    for e in examples:
        h.update(repr((e.goal, e.prefix, e.tactic, e.steps_remaining, e.repo_id, e.theorem_id, e.idx)).encode())
    return h.hexdigest()


def import_progress_jsonl(jsonl: str | Path, store_root: str | Path, name: str) -> dict:
    """Import `jsonl` as dataset `name`; returns {name, path, rows, status ('added' | 'unchanged'), sha256}.

    Raises InputError, writing nothing, for a malformed line (file, line and field named),
    an empty file, an invalid name, or a name already imported with other rows. The
    caller holds the store's writer lock.
    """
    check_name(name)
    jsonl = Path(jsonl)
    if not jsonl.is_file():
        raise InputError(jsonl, "does not exist or is not a file", "Give the path of a JSONL file.")
    examples = read_progress_jsonl(jsonl)
    if not examples:
        raise InputError(jsonl, "holds no rows", "Each line needs a {goal, prefix, tactic, steps_remaining} object.")
    target = dataset_path(store_root, name)
    remove_orphans(target.parent, depth=1)  # temp files of a killed import (the caller holds the writer lock)
    digest = _rows_digest(examples)
    if target.exists():
        if _rows_digest(read_imported(store_root, name)) == digest:
            return {"name": name, "path": str(target), "rows": len(examples), "status": "unchanged", "sha256": digest}
        raise InputError(
            f"--name {name}",
            f"a progress dataset of that name was already imported with other rows ({target})",
            "Import under a new name and list that one in trainers.progress.extra_datasets: names never change "
            "content, because training steps are cached by the names in their config.",
        )
    write_parquet(target, to_table(examples))
    return {"name": name, "path": str(target), "rows": len(examples), "status": "added", "sha256": digest}


def read_imported(store_root: str | Path, name: str) -> list[ProgressExample]:
    """The rows of imported dataset `name`; InputError naming the fix if it was never imported."""
    import pyarrow.parquet as pq

    path = dataset_path(store_root, name)
    if not path.is_file():
        raise InputError(
            f"trainers.progress.extra_datasets: {name}",
            f"no imported progress dataset of that name in the store ({path} does not exist)",
            f"Import it first with `dojoflow import-progress FILE.jsonl --name {name}` (same --home as the run), "
            "or remove it from extra_datasets.",
        )
    table = pq.read_table(path)
    missing = [f.name for f in SCHEMA if f.name not in table.column_names]
    if missing:
        raise InputError(path, f"lacks the columns {missing}", "Re-import the dataset under a new name.")
    return [
        ProgressExample(
            goal=r["goal"],
            prefix=r["prefix"],
            tactic=r["tactic"],
            steps_remaining=int(r["steps_remaining"]),
            repo_id=r["repo_id"],
            theorem_id=r["theorem_id"],
            idx=r["idx"],
        )
        for r in table.select([f.name for f in SCHEMA]).to_pylist()
    ]


def extra_examples(store_root: str | Path, names: list[str]) -> tuple[list[ProgressExample], dict[str, int]]:
    """The rows of every dataset in `names`, and the row count of each."""
    rows: list[ProgressExample] = []
    counts: dict[str, int] = {}
    for name in names:
        got = read_imported(store_root, name)
        rows.extend(got)
        counts[name] = len(got)
    return rows, counts
