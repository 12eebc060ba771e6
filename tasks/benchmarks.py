"""The pipeline's `benchmarks:` section: evaluation sets whose statements (and near-copies)
are kept out of training (storage/contamination.py).

A benchmark is a lean-grpo theorem file (JSONL of `{"name", "statement"}`, as miniF2F's or
ProofNet's statements are distributed; tasks/grpo/theorem_files.py reads it) or a LeanDojo
export folder (its theorems' `theorem_statement`s). Each is checked before anything is
written: a file that does not parse, an empty one, or one statement twice in one benchmark
is an error naming the file and line; two benchmarks sharing statements is a warning
naming both. Then each is stored content-addressed and the snapshot settings name its
fingerprint, so every snapshot (and result) built with it carries it.

    from tasks.benchmarks import BenchmarkConfig, load_benchmarks
    load_benchmarks([BenchmarkConfig(name="minif2f", path="examples/benchmarks/minif2f-mini.jsonl")])
"""

from __future__ import annotations

import logging
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from storage.contamination import fingerprint, save_benchmark
from storage.errors import InputError

log = logging.getLogger(__name__)


class BenchmarkConfig(BaseModel):
    """One evaluation set whose statements must not be trained on."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(..., min_length=1, description="A name for the benchmark, shown in contamination reports.")
    path: str = Field(
        ...,
        description="A lean-grpo theorem file (.jsonl/.json of {name, statement}) or a LeanDojo export folder.",
    )


def _positions(path: Path, count: int) -> list[str]:
    """Where each theorem of a theorem file is: `line N` for JSONL, else `item i`."""
    text = path.read_text(encoding="utf-8")
    lines = [n for n, line in enumerate(text.splitlines(), start=1) if line.strip()]
    if len(lines) == count and not text.lstrip().startswith("["):
        return [f"line {n}" for n in lines]
    return [f"item {i}" for i in range(count)]


def _read_export(path: Path) -> list[tuple[dict, str]]:
    """The stated theorems of an export's random/*.json, read and checked as `dojoflow import`
    reads them (storage/leandojo: regular files inside the folder, bounded, UTF-8 JSON, every
    record whole): a FIFO, a device, a link leaving the folder or a bad record is one InputError."""
    from storage.leandojo.files import check_root, read_bytes
    from storage.leandojo.theorems import SplitsRead, split_checked

    root, read, out = check_root(path), SplitsRead(), []
    for split_file in sorted((root / "random").glob("*.json")):
        for i, (_, thm) in enumerate(split_checked(split_file, read_bytes(split_file, root), read)):
            if thm is not None and thm.theorem_statement:
                out.append(({"name": thm.full_name, "statement": thm.theorem_statement}, f"{split_file.name} item {i}"))
    return out


def read_benchmark(config: BenchmarkConfig) -> list[tuple[dict, str]]:
    """[({name, statement}, where)] of one benchmark; InputError naming the file and line."""
    path = Path(config.path).expanduser()
    if path.is_dir():
        items = _read_export(path)
        if not items:
            raise InputError(path, "holds no theorem with a `theorem_statement`", "give a theorem file instead")
    else:
        from tasks.grpo.theorem_files import read_theorem_file

        theorems = read_theorem_file(path)  # parse errors and empty files: InputError naming the line
        items = [
            ({"name": t.name, "statement": t.statement}, w) for t, w in zip(theorems, _positions(path, len(theorems)))
        ]
    seen: dict[str, tuple[dict, str]] = {}
    for theorem, where in items:
        fp = fingerprint(theorem["statement"])
        if fp in seen:
            first, first_where = seen[fp]
            raise InputError(
                path,
                f"{theorem['name']} ({where}) states what {first['name']} ({first_where}) does",
                "list each statement once in a benchmark",
                where=where,
            )
        seen[fp] = (theorem, where)
    return items


def load_benchmarks(configs: list[BenchmarkConfig]) -> tuple[dict[str, list[dict]], list[str]]:
    """({name: theorems}, warnings) of every benchmark, checked; nothing is written. The caller
    says the warnings (the CLI before the run, the flow's log)."""
    names = [c.name for c in configs]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise InputError("benchmarks", f"names {', '.join(twice)} twice", "give every benchmark its own name")
    read = {c.name: read_benchmark(c) for c in configs}
    warnings, owner = [], {}
    for config in configs:
        for theorem, where in read[config.name]:
            fp = fingerprint(theorem["statement"])
            if fp in owner and owner[fp][0] != config.name:
                other, other_where, other_path = owner[fp]
                warnings.append(
                    f"{config.path} ({where}, {theorem['name']}) repeats a statement of benchmark `{other}` "
                    f"({other_path}, {other_where}): one set under two names counts twice"
                )
            owner.setdefault(fp, (config.name, where, config.path))
    return {name: [t for t, _ in items] for name, items in read.items()}, warnings


def register_benchmarks(store, configs: list[BenchmarkConfig], snapshot_settings):
    """Store every benchmark and return the snapshot settings naming their fingerprints, and those
    of the statement sets in the store marked as benchmarks (docs/statement-sets.md): a set imported
    with `dojoflow import-statements --benchmark` keeps its statements out of every later run."""
    from storage.statement_sets import list_sets

    sets = tuple(m["benchmark_fingerprint"] for m in list_sets(store) if m.get("benchmark_fingerprint"))
    if not configs and not sets:
        return snapshot_settings
    fingerprints: tuple[str, ...] = ()
    if configs:
        benchmarks, warnings = load_benchmarks(configs)
        for w in warnings:
            log.warning(w)
        fingerprints = tuple(save_benchmark(store, name, theorems) for name, theorems in benchmarks.items())
    return snapshot_settings.model_copy(update={"benchmarks": tuple(dict.fromkeys((*fingerprints, *sets)))})
