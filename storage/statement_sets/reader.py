"""Reading a statement set: a file or folder with the `datasets` library (Parquet, JSONL, JSON,
Arrow, CSV, a saved dataset folder), a hub id when the network allows, or PutnamBench's Lean files;
then its columns mapped to Dojoflow's fields (presets.py) and each row checked (build.py).

    from storage.statement_sets.reader import StatementSetConfig, read_set
    table, meta = read_set(StatementSetConfig(path="minif2f.jsonl", name="minif2f", benchmark=True))

Nothing here writes to the store; `import_set` (below) reads, then writes in one commit.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Optional

from pydantic import BaseModel, ConfigDict, Field

from ..errors import InputError
from ..splits import SplitSettings
from .build import BuildOptions, build_table, content_hash
from .identity import SPLIT_NAMES, separate_header
from .presets import FIELDS, PRESETS, Preset, detect

_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
_SUFFIX_BUILDER = {".jsonl": "json", ".json": "json", ".parquet": "parquet", ".arrow": "arrow", ".csv": "csv"}
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


class StatementSetConfig(BaseModel):
    """One statement set to import (the config's `statements:` list, `dojoflow import-statements`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str = Field(
        ...,
        min_length=1,
        description="A file (.jsonl/.json/.parquet/.arrow/.csv/.lean), a folder "
        "(a saved dataset, data files, or PutnamBench's .lean files) or a hub dataset id (owner/name).",
    )
    name: Optional[str] = Field(None, description="The set's name in the store (default: the file's or folder's stem).")
    preset: Optional[str] = Field(
        None, description=f"The format: {', '.join(PRESETS)}; default: the preset whose columns the file has exactly."
    )
    columns: dict[str, str] = Field(
        default_factory=dict,
        description=f"Dojoflow field -> the file's column ({', '.join(FIELDS)}); overrides the preset's.",
    )
    split: Optional[str] = Field(
        None,
        description="Read only this split: of a hub dataset or saved DatasetDict, or the rows whose split column "
        "says it (`test` of DeepSeek's miniF2F: miniF2F-test as a benchmark of its own); default: all.",
    )
    lean_version: Optional[str] = Field(
        None,
        description="The Lean version the set was written for (e.g. v4.15.0); "
        "default: a lean-toolchain beside the files, or a `lean_version` column.",
    )
    mathlib_version: Optional[str] = Field(None, description="The Mathlib version (a tag or commit), when known.")
    benchmark: bool = Field(
        False,
        description="An evaluation set: its statements never enter training, and results "
        "on it are reported as leaderboard lines (docs/statement-sets.md).",
    )
    publish_proofs: bool = Field(
        True,
        description="false: no proof text of this set leaves the store (PutnamBench "
        "asks it); cards, exports and patches say how many, never what.",
    )
    extra_import_roots: list[str] = Field(
        default_factory=list,
        description="Module roots the set's headers may import beyond Lean 4's and Mathlib's (e.g. a project's own).",
    )

    def set_name(self) -> str:
        name = self.name or Path(self.path.rstrip("/")).stem.removesuffix(".jsonl")
        name = f"{name}-{self.split}" if self.split and not self.name else name
        name = name.replace("/", "_") if not Path(self.path).exists() else name
        if not _NAME.match(name):
            raise InputError(self.path, f"gives the set name {name!r}", "name it with --name (letters, digits, _.-)")
        return name


def _load(path_or_id: str, split: str | None):
    """A `datasets` Dataset or DatasetDict; InputError for what cannot be read. `datasets` logs a
    file it cannot read with a traceback at ERROR level: quiet while loading, the InputError says it."""
    import datasets

    datasets.disable_progress_bars()
    level = datasets.logging.get_verbosity()
    datasets.logging.set_verbosity(datasets.logging.CRITICAL + 10)
    try:
        return _load_quietly(path_or_id, split)
    finally:
        datasets.logging.set_verbosity(level)


def _load_quietly(path_or_id: str, split: str | None):
    import datasets

    path = Path(path_or_id).expanduser()
    try:
        if path.is_dir():
            if any((path / f).exists() for f in ("dataset_info.json", "dataset_dict.json", "state.json")):
                ds = datasets.load_from_disk(str(path), keep_in_memory=True)
                return ds[split] if split and isinstance(ds, datasets.DatasetDict) else ds
            return datasets.load_dataset(str(path), split=split, keep_in_memory=True)
        if path.is_file():
            builder = _SUFFIX_BUILDER.get(path.suffix.lower())
            if builder is None:
                raise InputError(path, f"has the suffix {path.suffix!r}", f"give one of {', '.join(_SUFFIX_BUILDER)}")
            return datasets.load_dataset(builder, data_files=str(path), split="train", keep_in_memory=True)
    except InputError:
        raise
    except Exception as e:  # noqa: BLE001  (datasets and pyarrow raise many kinds for a bad file)
        raise InputError(
            path, f"cannot be read ({_first_line(e)})", "give a readable file", where=_bad_line(path)
        ) from None
    if not _HUB_ID.match(path_or_id):
        raise InputError(path_or_id, "is no file, folder or hub dataset id", "give a path or owner/name")
    try:
        return datasets.load_dataset(path_or_id, split=split)
    except Exception as e:  # noqa: BLE001
        raise InputError(
            path_or_id,
            f"could not be loaded from the hub ({_first_line(e)})",
            "check the id and the network (HF_HUB_OFFLINE=1 forbids downloads), or give a local file",
        ) from None


def _first_line(e: Exception) -> str:
    cause = e.__cause__ or e
    text = str(cause).strip().splitlines()
    return f"{type(cause).__name__}: {text[0][:200]}" if text else type(cause).__name__


def _bad_line(path: Path) -> str | None:
    """For JSON Lines, the first line that is not a JSON object: where to look."""
    if path.suffix.lower() != ".jsonl" or not path.is_file():
        return None
    try:
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f):
                if line.strip():
                    try:
                        json.loads(line)
                    except ValueError:
                        return f"row {n} (line {n + 1})"
    except UnicodeDecodeError:
        return "not UTF-8 text"
    return None


def _tables(ds) -> list[tuple[str | None, object]]:
    """[(split name or None, pyarrow table)] of a Dataset or DatasetDict."""
    import datasets

    if isinstance(ds, datasets.DatasetDict):
        return [(name, d.data.table) for name, d in ds.items()]
    return [(None, ds.data.table)]


def _mapping(config: StatementSetConfig, columns: list[str], source) -> tuple[Preset | None, dict[str, str]]:
    preset = None
    if config.preset is not None:
        preset = PRESETS.get(config.preset)
        if preset is None:
            raise InputError(source, f"names the preset {config.preset!r}", f"use one of {', '.join(PRESETS)}")
    elif not config.columns:
        preset = detect(columns)
        if preset is None:
            raise InputError(
                source,
                f"has the columns {', '.join(columns)}, which match no preset",
                "name the columns (--column statement=COL ...) or a --preset",
            )
    fields = dict(preset.columns) if preset else {}
    if preset:
        fields.update({k: v for k, v in preset.optional.items() if k in FIELDS and v in columns})
    fields.update(config.columns)
    unknown = sorted(set(config.columns) - set(FIELDS))
    if unknown:
        raise InputError(
            source, f"maps the unknown field {unknown[0]!r}", f"map only {', '.join(FIELDS)}", where="columns"
        )
    for f, col in fields.items():
        if col not in columns:
            raise InputError(
                source,
                f"has no column {col!r} (the mapping's `{f}`)",
                f"map `{f}` to one of {', '.join(columns)}",
                where=f"field `{f}`",
            )
    if "statement" not in fields:
        raise InputError(source, "maps no column to `statement`", "give --column statement=COLUMN", where="columns")
    return preset, fields


def read_records(config: StatementSetConfig):
    """(records, the mapping {field: column}, preset name, what the files say of versions)."""
    path = Path(config.path).expanduser()
    if config.preset == "putnambench" or (path.exists() and _is_lean_source(path)):
        from .putnambench import read_lean_files

        records, versions = read_lean_files(path)
        return records, {"statement": "file"}, "putnambench", versions
    ds = _load(config.path, config.split if path.is_dir() or not path.exists() else None)
    records, fields, preset = [], None, None
    for split_name, table in _tables(ds):
        columns = table.column_names
        preset, fields = _mapping(config, columns, config.path)
        records += _rows(table, fields, preset, split_name, start=len(records))
    if config.split:
        wanted = SPLIT_NAMES.get(config.split.lower(), config.split)
        records = [r for r in records if SPLIT_NAMES.get(str(r.get("split") or "").lower()) == wanted]
        if not records:
            raise InputError(config.path, f"holds no row of split {config.split!r}", "give a split it has, or none")
    return records, fields, preset.name if preset else None, {}


def _is_lean_source(path: Path) -> bool:
    return path.suffix == ".lean" or (path.is_dir() and any(path.glob("*.lean")))


def _rows(table, fields: dict[str, str], preset: Preset | None, split_name: str | None, start: int) -> list[dict]:
    names = set(fields.values()) | ({preset.proof_when[0]} if preset and preset.proof_when else set())
    extra_cols = [c for c in table.column_names if c not in names]
    data = {c: table.column(c).to_pylist() for c in names}
    extras = {c: table.column(c).to_pylist() for c in extra_cols}
    out = []
    for i in range(table.num_rows):
        rec = {f: data[c][i] for f, c in fields.items()}
        rec["row"] = start + i
        rec["extra"] = {c: v[i] for c, v in extras.items() if v[i] is not None} or None
        if preset and preset.proof_when and data[preset.proof_when[0]][i] != preset.proof_when[1]:
            rec["proof"] = None
        if preset and preset.name == "lean_grpo":
            rec["header"] = _grpo_header(rec.get("extra") or {})
        if rec.get("split") is None and split_name is not None:
            rec["split"] = split_name
        if rec.get("name") in (None, ""):
            rec["name"] = f"row{rec['row']}"
        rec["name"] = str(rec["name"])
        statement = rec.get("statement")
        if isinstance(statement, str):
            prefix, rec["statement"] = separate_header(statement)
            if prefix.strip():
                rec["header"] = (rec.get("header") or "") + prefix
        out.append(rec)
    return out


def _grpo_header(extra: dict) -> str:
    imports = "".join(f"import {m}\n" for m in extra.get("imports") or [])
    return imports + (extra.get("context") or "")


def read_set(config: StatementSetConfig, split_settings: SplitSettings | None = None):
    """(the set's table, its set.json) read and checked; nothing written. InputError for bad input."""
    name = config.set_name()
    records, fields, preset_name, versions = read_records(config)
    preset = PRESETS.get(preset_name) if preset_name else None
    opts = BuildOptions(
        needs_assign=bool(preset and preset.needs_assign),
        needs_sorry=bool(preset and preset.needs_sorry),
        extra_import_roots=tuple(config.extra_import_roots),
        split_settings=split_settings or SplitSettings(),
        default_split="test" if config.benchmark else None,
    )
    row_versions = {r.get("lean_version") for r in records if r.get("lean_version")}
    lean = (
        config.lean_version or versions.get("lean_version") or (row_versions.pop() if len(row_versions) == 1 else None)
    )
    mathlib = config.mathlib_version or versions.get("mathlib_version")
    for r in records:
        r["lean_version"] = r.get("lean_version") or lean
        r["mathlib_version"] = mathlib
    table, counts = build_table(records, config.path, fields, name, opts)
    if config.benchmark:  # what theorem_results.benchmark holds for results on it (contamination.py)
        from ..contamination import benchmark_fingerprint

        counts["benchmark_fingerprint"] = benchmark_fingerprint(table.column("statement").to_pylist())
    meta = {
        "name": name,
        "content_hash": content_hash(table),
        "lean_version": lean,
        "mathlib_version": mathlib,
        "benchmark": config.benchmark,
        "publish_proofs": config.publish_proofs,
        "source_path": config.path,
        "preset": preset_name,
        "columns": fields,
        **counts,
    }
    return table, meta


def import_set(store, config: StatementSetConfig, replace: bool = False, split_settings=None) -> dict:
    """Read and check the set, then write it in one commit; a summary row (see `summary`)."""
    from .sets import add_set

    table, meta = read_set(config, split_settings)
    with store.writer():
        status = add_set(store, meta, table, replace=replace)
    return summary(store, config, table, meta, status)


def summary(store, config: StatementSetConfig, table, meta: dict, status: str) -> dict:
    """What an import did, as a row; a benchmark set's statements are stored as a benchmark too, so
    repositories' snapshots keep them out of training (storage/contamination.py)."""
    if config.benchmark:
        from ..contamination import save_benchmark

        save_benchmark(store, meta["name"], table.select(["name", "statement"]).to_pylist())
    splits = table.column("split").to_pylist()
    return {
        "set": meta["name"],
        "status": status,
        "statements": table.num_rows,
        **{s: splits.count(s) for s in ("train", "val", "test")},
        "claimed_proofs": table.num_rows - table.column("claimed_proof").null_count,
        "lean": meta["lean_version"] or "not recorded",
        "preset": meta["preset"] or "columns",
        "benchmark": bool(config.benchmark),
    }
