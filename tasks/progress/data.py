"""Rows of the proof-progress model: (goal, prefix, candidate tactic) -> steps remaining.

Every traced proof of n tactics t_0 … t_{n-1} gives one row per tactic t_i:

    goal            = state_before of t_i
    prefix          = t_0 … t_{i-1}, joined by newlines ("" for the first tactic)
    tactic          = t_i (the candidate)
    steps_remaining = n − i

Indices count from 0 and the candidate counts itself: the first tactic of a proof
has n steps remaining, the last has 1. This is the reading of the JSONL format of
LeanDojo-v2's ProgressTrainer that its documented example follows (goal `⊢ n + 0 = n`,
prefix `induction n with`, candidate `rfl`, steps_remaining 2: `rfl` and one more).
Imported JSONL values are taken as they are; upstream's toy generator also writes 0
for a tactic that closes the proof, which is the only value our derivation never makes.

The model reads one string per row, exactly `INPUT_TEMPLATE` (LeanDojo-v2's):
"Goal:\\n{goal}\\n\\nPrefix:\\n{prefix}\\n\\nCandidate tactic:\\n{tactic}".

Proofs that contain `sorry` (or `admit`) are left out whole: a placeholder hides an
unknown number of real steps, so every remaining-step count in that proof is wrong.
Snapshot rows have `sorry` tactics and `no goals` states dropped already but carry
`num_tactics` (the proof's full length) and `idx`, so n − i stays exact; a prefix
holds the tactics the snapshot kept.

    python -c "from tasks.progress.data import read_progress_jsonl as r; print(r('rows.jsonl')[:2])"
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from storage.atomic import write_text
from storage.errors import InputError

INPUT_TEMPLATE = "Goal:\n{goal}\n\nPrefix:\n{prefix}\n\nCandidate tactic:\n{tactic}"
TARGET_CONVENTION = (
    "steps_remaining = n - i for tactic i (from 0) of a proof of n tactics: the candidate counts "
    "itself, the first tactic has n, the last has 1"
)

# `sorry`/`admit` as whole identifiers (not `sorryAx_lemma` or `h.sorry_free`).
_SORRY_RE = re.compile(r"(?<![\w.'])(sorry|admit)(?![\w.'!?])")


def format_input(goal: str, prefix: str, tactic: str) -> str:
    """The model's input text for one row (`INPUT_TEMPLATE`)."""
    return INPUT_TEMPLATE.format(goal=goal, prefix=prefix or "", tactic=tactic)


def join_prefix(tactics: Iterable[str]) -> str:
    """The prefix text of a list of tactics: one per line, in proof order."""
    return "\n".join(tactics)


@dataclass(frozen=True)
class ProgressExample:
    """One training/evaluation row. `repo_id`, `theorem_id`, `idx` say where it came from."""

    goal: str
    prefix: str
    tactic: str
    steps_remaining: int
    repo_id: str | None = None
    theorem_id: str | None = None
    idx: int | None = None

    def text(self) -> str:
        return format_input(self.goal, self.prefix, self.tactic)


@dataclass(frozen=True)
class ProgressRows:
    """Rows derived from a table of tactics, with what was left out and why."""

    examples: list[ProgressExample]
    proofs: int = 0  # proofs that gave rows
    excluded_sorry: int = 0  # proofs left out because they contain sorry/admit (marked or seen)
    per_repo: dict[str, int] = field(default_factory=dict)  # rows per repository


def derive_examples(tactics: pa.Table, theorems: pa.Table | None = None, source: str = "tactics") -> ProgressRows:
    """Progress rows of every proof in `tactics` (schema SNAPSHOT_TACTICS).

    `theorems` (schema THEOREMS), when given, marks proofs with `has_sorry`, which are
    left out; so is any proof one of whose kept tactics mentions `sorry` or `admit`.
    `source` names the data in error messages.
    """
    sorry_ids: set[tuple[str, str]] = set()
    if theorems is not None and theorems.num_rows:
        for repo, tid, has_sorry in zip(
            theorems.column("repo_id").to_pylist(),
            theorems.column("theorem_id").to_pylist(),
            theorems.column("has_sorry").to_pylist(),
        ):
            if has_sorry:
                sorry_ids.add((repo, tid))

    cols = ("repo_id", "theorem_id", "full_name", "idx", "num_tactics", "state_before", "tactic")
    data = {c: tactics.column(c).to_pylist() for c in cols}
    proofs: dict[tuple[str, str], list[int]] = {}
    for row, key in enumerate(zip(data["repo_id"], data["theorem_id"])):
        proofs.setdefault(key, []).append(row)

    examples: list[ProgressExample] = []
    per_repo: dict[str, int] = {}
    used = excluded = 0
    for key, rows in proofs.items():
        rows.sort(key=lambda r: data["idx"][r])
        if key in sorry_ids:
            continue
        if any(_SORRY_RE.search(data["tactic"][r]) for r in rows):
            excluded += 1
            continue
        done: list[str] = []
        for r in rows:
            i, n = data["idx"][r], data["num_tactics"][r]
            if not 0 <= i < n:
                raise InputError(
                    source,
                    f"tactic idx {i} is outside the proof's {n} tactics",
                    "The snapshot is inconsistent; rebuild it from the store.",
                    where=f"{key[0]} {data['full_name'][r]}",
                )
            examples.append(
                ProgressExample(
                    goal=data["state_before"][r],
                    prefix=join_prefix(done),
                    tactic=data["tactic"][r],
                    steps_remaining=n - i,
                    repo_id=key[0],
                    theorem_id=key[1],
                    idx=i,
                )
            )
            done.append(data["tactic"][r])
        used += 1
        per_repo[key[0]] = per_repo.get(key[0], 0) + len(rows)
    # Marked theorems count even when the snapshot kept none of their tactics.
    excluded += len(sorry_ids)
    return ProgressRows(examples=examples, proofs=used, excluded_sorry=excluded, per_repo=per_repo)


def progress_examples(snapshot, split_kind: str, split: str, repo_ids=None) -> ProgressRows:
    """Progress rows of one split of a snapshot (`storage.snapshot_ref.SnapshotRef`)."""
    tactics = snapshot.tactics(split_kind, split, repo_ids)
    theorems = snapshot.theorems(split_kind, split, repo_ids)
    return derive_examples(tactics, theorems, source=f"snapshot {snapshot.snapshot_id} {split_kind}/{split}")


# -- JSONL (LeanDojo-v2's ProgressTrainer format) -------------------------------------


def _steps(value, path: Path, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(path, f"steps_remaining must be a non-negative integer, not {value!r}", "Fix the line.", where)
    if isinstance(value, float):
        if not (math.isfinite(value) and value.is_integer()):
            raise InputError(
                path, f"steps_remaining must be a non-negative integer, not {value!r}", "Fix the line.", where
            )
        value = int(value)
    if value < 0:
        raise InputError(path, f"steps_remaining must be a non-negative integer, not {value}", "Fix the line.", where)
    return value


def read_progress_jsonl(path: str | Path) -> list[ProgressExample]:
    """Rows from a JSONL file of `{goal, prefix?, tactic, steps_remaining}` objects.

    `prefix` may be missing or null (read as ""); `repo_id`, `theorem_id`, `idx` are
    read when present; other keys are ignored. Blank lines are skipped. A malformed
    line raises InputError naming the file, the line number and the field.
    """
    path = Path(path)
    out: list[ProgressExample] = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, start=1):
            if not line.strip():
                continue
            where = f"line {lineno}"
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                raise InputError(
                    path, f"not valid JSON ({e.msg} at column {e.colno})", "Fix the line.", where
                ) from None
            if not isinstance(obj, dict):
                raise InputError(path, f"expected a JSON object, found {type(obj).__name__}", "Fix the line.", where)
            for name in ("goal", "tactic", "steps_remaining"):
                if name not in obj:
                    raise InputError(
                        path,
                        f"required field {name!r} is missing",
                        "Each line needs goal, tactic and steps_remaining (prefix is optional).",
                        f"{where}, field {name}",
                    )
            values = {}
            for name in ("goal", "tactic", "prefix"):
                value = obj.get(name)
                if name == "prefix" and value is None:
                    value = ""
                if not isinstance(value, str):
                    raise InputError(
                        path, f"{name} must be a string, not {value!r}", "Fix the line.", f"{where}, field {name}"
                    )
                values[name] = value
            steps = _steps(obj["steps_remaining"], path, f"{where}, field steps_remaining")
            idx = obj.get("idx")
            if idx is not None and (isinstance(idx, bool) or not isinstance(idx, int)):
                raise InputError(path, f"idx must be an integer, not {idx!r}", "Fix the line.", f"{where}, field idx")
            out.append(
                ProgressExample(
                    goal=values["goal"],
                    prefix=values["prefix"],
                    tactic=values["tactic"],
                    steps_remaining=steps,
                    repo_id=obj.get("repo_id"),
                    theorem_id=obj.get("theorem_id"),
                    idx=idx,
                )
            )
    return out


def write_progress_jsonl(path: str | Path, examples: Iterable[ProgressExample]) -> int:
    """Write rows as JSONL (atomically); provenance keys only where known. Returns the count."""
    lines = []
    for ex in examples:
        obj = {"goal": ex.goal, "prefix": ex.prefix, "tactic": ex.tactic, "steps_remaining": ex.steps_remaining}
        for key in ("repo_id", "theorem_id", "idx"):
            value = getattr(ex, key)
            if value is not None:
                obj[key] = value
        lines.append(json.dumps(obj, ensure_ascii=False))
    write_text(Path(path), "".join(line + "\n" for line in lines))
    return len(lines)
