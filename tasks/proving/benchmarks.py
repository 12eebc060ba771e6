"""The proving evaluation on declared benchmarks (the pipeline's `benchmarks:`, kept out of
training by storage/contamination.py): which of their statements a backend can try, as
theorem records of a group of their own (repository `benchmark:NAME`, split `benchmark`),
each carrying the benchmark's fingerprint into the metric and theorem_results rows.

How a benchmark statement is tried depends on the backend, and is said in every row:
- `replay` answers from traced transitions only. A benchmark statement is tried through a
  store theorem with the same statement fingerprint (storage/contamination.py: the same
  statement up to binder and theorem names and layout) that has a traced tactic proof;
  `via` names it. Replay never checks the benchmark's own text; a statement no repository
  traces is untried, with the reason.
- `kimina` with a `header` checks the benchmark's own statement under that header (a
  statement-only spec, as `dojoflow grpo evaluate` does with a theorem file).
- `repl`, `leandojo` and `kimina` without a header elaborate a theorem in its repository's
  file: a benchmark statement goes through a store theorem of the same fingerprint (its
  file, position and statement), else it is untried, with the reason.

    python -c "help('tasks.proving.benchmarks')"
"""

from __future__ import annotations

import json

from storage.contamination import fingerprint, load_benchmark
from storage.errors import InputError
from storage.ids import theorem_id
from tasks.lean.backend import TheoremSpec
from tasks.lean.registry import get, of

from .config import ProvingSettings
from .records import Selection, TheoremToTry, Untried

SPLIT = "benchmark"  # the `split` of every row computed on a benchmark


def group_id(name: str) -> str:
    """The `repo_id` of a benchmark's rows: `benchmark:minif2f`."""
    return f"benchmark:{name}"


def snapshot_benchmarks(store, snapshot_id: str | None, names: list[str]) -> list[dict]:
    """The benchmarks named `names` among those the snapshot kept out of training
    ({name, fingerprint, theorems}); InputError naming one it does not hold."""
    if not names:
        return []
    manifest = store.root / "snapshots" / str(snapshot_id) / "manifest.json"
    fingerprints = []
    if snapshot_id and manifest.is_file():
        fingerprints = (json.loads(manifest.read_text()).get("settings") or {}).get("benchmarks", [])
    held = {b["name"]: b for b in (load_benchmark(store, fp) for fp in fingerprints)}
    missing = [n for n in names if n not in held]
    if missing:
        raise InputError(
            "evaluation.proving.benchmarks",
            f"names {', '.join(missing)}, which snapshot {snapshot_id} does not keep out of training "
            f"(it holds: {', '.join(sorted(held)) or 'none'})",
            "declare each under the pipeline's `benchmarks:` (name and path), or remove it here",
        )
    return [held[n] for n in names]


def store_matches(store, repo_ids: list[str]) -> dict[str, TheoremSpec]:
    """{statement fingerprint: the first store theorem with it and a traced tactic proof}."""
    from tasks.lean import load_theorems

    specs = load_theorems(store, repo_ids, tactic_proofs_only=True, need_statement=False)
    sorry = {
        (r["repo_id"], r["full_name"])
        for r in store.read_table("theorems", repo_ids, columns=["repo_id", "full_name", "has_sorry"]).to_pylist()
        if r["has_sorry"]
    }
    out: dict[str, TheoremSpec] = {}
    for s in specs:
        if s.statement and (s.repo_id, s.full_name) not in sorry:
            out.setdefault(fingerprint(s.statement), s)
    return out


def _why_untried(kind: str) -> str:
    if not get(kind).needs_statement:
        return (
            f"{kind} answers from traced proofs only, and no repository in the store traces this statement "
            "(by its fingerprint); a Lean backend (kimina with `backend.kimina.header`) can check it"
        )
    return (
        f"the {kind} backend elaborates a theorem in its repository's file, and no repository in the store "
        "holds this statement; use kimina with `backend.kimina.header` (e.g. `import Mathlib`) to check it as stated"
    )


def select_benchmark_theorems(store, settings: ProvingSettings, benchmarks: list[dict]) -> Selection:
    """The theorems to try and the untried ones of `benchmarks` (module doc): every statement
    of each (`max_theorems` caps repositories' splits, never a benchmark: a figure over part of
    one is not the benchmark's). A statement is matched against every repository in the store,
    so each step tries the same ones."""
    from .evaluate import initial_goals

    repo_ids = [r["repo_id"] for r in store.repositories()]
    kind = settings.backend.kind
    as_stated = bool(of(settings.backend).fixed_header(settings.backend))
    matches = {} if as_stated else store_matches(store, repo_ids)
    goals = initial_goals(store, repo_ids) if matches else {}
    theorems, untried = [], []
    for b in benchmarks:
        group = group_id(b["name"])
        items = []
        for t in b["theorems"]:
            fp = fingerprint(t["statement"])
            base = {
                "repo_id": group,
                "file_path": "",
                "full_name": t["name"],
                "theorem_id": theorem_id(group, fp, t["name"]),  # the statement's fingerprint: a changed one is new
                "split": SPLIT,
                "benchmark": b["fingerprint"],
            }
            items.append((base, fp, t["statement"]))
        for base, fp, statement in sorted(items, key=lambda item: item[0]["full_name"]):
            if as_stated:
                spec = TheoremSpec(group, "", "", "", base["full_name"], statement.rstrip().removesuffix(":=").rstrip())
                theorems.append(TheoremToTry(**base, via=None, goals="", spec=spec))
            elif fp in matches:
                s = matches[fp]
                key = (s.repo_id, s.file_path, s.full_name)
                theorems.append(
                    TheoremToTry(**base, via=f"{s.repo_id}:{s.full_name}", goals=goals.get(key, ""), spec=s)
                )
            else:
                untried.append(Untried(**base, reason=_why_untried(kind)))
    return Selection(theorems=theorems, untried=untried)
