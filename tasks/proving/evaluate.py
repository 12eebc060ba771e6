"""Proving as an evaluation: a tactic generator's checkpoint tries theorems, and pass@k,
mean expansions, mean seconds and errors are reported per repository and split.

- `select_theorems`: which theorems (JSON records, so Prefect tasks can carry them):
  every split asked, at most `max_theorems` per repository and split, chosen by a fixed
  hash of the theorem id so that every curriculum step tries the same ones; `sorry`
  theorems are left out (they are what `dojoflow prove` is for), and with the `replay`
  backend so are theorems without a traced tactic proof (replay cannot start them).
- `prove_theorems`: one batch, one backend and one generator; `attempts` searches per
  theorem (attempt i reseeded with seed + i); a record per theorem with n, c, the first
  proof found, expansions, seconds and errors.
- `proving_metrics`: metric rows. A theorem whose search failed for a backend reason
  (crash, hang, could not start) counts in `proving_errors`, not in pass@k (ReProver's
  rule: pass@1 = proved / (proved + failed)). Pass metrics are named after the checker
  that decided them: `replay_pass@1` when replay did, `repl_pass@1` when Lean did.

    python -c "help('tasks.proving.evaluate')"
"""

from __future__ import annotations

import os
import socket
from collections import defaultdict
from dataclasses import asdict
from pathlib import Path

import pyarrow.compute as pc

from storage.ids import theorem_id, unit_interval
from tasks.lean.backend import TheoremSpec
from tasks.search import SearchBudget, best_first_search_many, pass_at_k_mean, whole_proof_search

from .config import ProvingSettings

RECORD_VERSION = 2  # of the records `prove_theorems` returns: part of their cache key (flows/proving_tasks.py)
PROVING = "proving"  # the `trainer` column of proving metrics: they score the generator's checkpoint by search


def _record(spec: TheoremSpec, split: str | None, goals: str) -> dict:
    d = asdict(spec)
    d["start"] = list(spec.start) if spec.start is not None else None
    return {**d, "theorem_id": theorem_id(spec.repo_id, spec.file_path, spec.full_name), "split": split, "goals": goals}


def spec_of(record: dict) -> TheoremSpec:
    fields = TheoremSpec.__dataclass_fields__
    start = record.get("start")
    return TheoremSpec(**{**{k: record[k] for k in fields if k in record}, "start": tuple(start) if start else None})


def initial_goals(store, repo_ids: list[str]) -> dict[tuple[str, str, str], str]:
    """{(repo_id, file_path, full_name): the traced state before the first tactic}."""
    table = store.read_table("tactics", repo_ids, columns=["repo_id", "file_path", "full_name", "idx", "state_before"])
    table = table.filter(pc.field("idx") == 0)
    return {(r["repo_id"], r["file_path"], r["full_name"]): r["state_before"] for r in table.to_pylist()}


def select_theorems(store, repo_ids: list[str], split_kind: str, settings: ProvingSettings) -> list[dict]:
    """The theorems a proving evaluation tries, as records (see the module doc)."""
    from tasks.lean import load_theorems

    sorry = {
        (r["repo_id"], r["full_name"])
        for r in store.read_table("theorems", repo_ids, columns=["repo_id", "full_name", "has_sorry"])
        .filter(pc.field("has_sorry"))
        .to_pylist()
    }
    goals = initial_goals(store, repo_ids)
    out = []
    for split in settings.splits:
        specs = load_theorems(
            store, repo_ids, split=split, split_kind=split_kind, tactic_proofs_only=settings.backend.kind == "replay"
        )
        by_repo: dict[str, list[TheoremSpec]] = defaultdict(list)
        for s in specs:
            if (s.repo_id, s.full_name) not in sorry:
                by_repo[s.repo_id].append(s)
        for repo in repo_ids:
            chosen = sorted(
                by_repo.get(repo, []), key=lambda s: unit_interval(theorem_id(s.repo_id, s.file_path, s.full_name))
            )
            if settings.max_theorems is not None:
                chosen = chosen[: settings.max_theorems]
            for s in sorted(chosen, key=lambda s: (s.file_path, s.start or (0, 0), s.full_name)):
                out.append(_record(s, split, goals.get((s.repo_id, s.file_path, s.full_name), "")))
    return out


def search_budget(settings: ProvingSettings) -> SearchBudget:
    return SearchBudget(
        num_tactics=settings.num_tactics,
        max_expansions=settings.max_expansions,
        timeout_s=settings.timeout_s,
        allowed_axioms=tuple(settings.backend.allowed_axioms),
    )


def open_search_tools(
    store,
    settings: ProvingSettings,
    checkpoint_dir: str | None,
    repo_ids: list[str],
    model_cache_dir: str | Path | None = None,
):
    """(backend, generator) for a batch; each fails with a clear error if it cannot work."""
    from tasks.generate import open_generator
    from tasks.lean import open_backend

    premises = None
    if settings.generator.kind == "retrieval":
        from tasks.retriever.data import PremiseCorpus

        premises = PremiseCorpus(store.read_table("premises", repo_ids), store.read_table("files", repo_ids))
    generator = open_generator(settings.generator, checkpoint_dir, premises, model_cache_dir)
    try:
        backend = open_backend(settings.backend, store)
    except BaseException:
        generator.close()
        raise
    return backend, generator


def prove_theorems(
    store,
    settings: ProvingSettings,
    checkpoint_dir: str | None,
    theorems: list[dict],
    model_cache_dir: str | Path | None = None,
) -> list[dict]:
    """Search every theorem record `settings.attempts` times; one result record per theorem."""
    if not theorems:
        return []
    budget = search_budget(settings)
    specs = [spec_of(t) for t in theorems]
    backend, generator = open_search_tools(
        store, settings, checkpoint_dir, sorted({s.repo_id for s in specs}), model_cache_dir
    )
    runs: list[list] = [[] for _ in specs]
    try:
        for attempt in range(settings.attempts):
            generator.reseed(settings.seed + attempt)
            if settings.mode == "best_first":
                results = best_first_search_many(specs, backend, generator, budget)
            else:
                results = [
                    whole_proof_search(s, backend, generator, budget, goals=t.get("goals", ""))
                    for s, t in zip(specs, theorems)
                ]
            for i, r in enumerate(results):
                runs[i].append(r)
    finally:
        generator.close()
        backend.close()
    searched_by = f"{socket.gethostname()}:{os.getpid()}"  # which worker: provenance, and how runners spread work
    out = []
    for t, results in zip(theorems, runs):
        proved = next((r for r in results if r.proved), None)
        errors = [r.error for r in results if r.stopped == "error"]
        unverified = [u for r in results for u in r.unverified]
        out.append(
            {
                **t,
                "checker": backend.name,
                "generator": generator.name,
                "n": sum(r.attempts for r in results),
                "c": sum(r.successes for r in results),
                "errors": len(errors),
                "unverified": len(unverified) if proved is None else 0,
                "error": errors[0] if errors else None,
                "expansions": sum(r.expansions for r in results) / len(results),
                "seconds": sum(r.seconds for r in results) / len(results),
                "stopped": [r.stopped for r in results],
                "proof": list(proved.proof) if proved else None,
                "axioms": list(proved.axioms) if proved else [],
                "proof_expansions": proved.expansions if proved else None,
                "proof_seconds": proved.seconds if proved else None,
                "searched_by": searched_by,
            }
        )
    return out


def proving_metrics(records: list[dict], settings: ProvingSettings) -> list[dict]:
    """Metric rows (repo_id, split, metric, value, count) per repository and split."""
    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for r in records:
        groups[(r["repo_id"], r["split"])].append(r)
    checker = settings.backend.kind
    rows = []
    for (repo, split), recs in sorted(groups.items()):
        # Left out of pass@k: theorems whose search failed, and those whose only finished proofs
        # the backend could not verify (tasks/lean/verdict.py): neither is a failure to prove.
        decided = [r for r in recs if not r["errors"] and not r.get("unverified")]
        counts = [(r["n"], r["c"]) for r in decided]
        figures = {f"{checker}_pass@1": (pass_at_k_mean(counts, 1), len(decided))}
        if settings.k > 1:
            figures[f"{checker}_pass@{settings.k}"] = (pass_at_k_mean(counts, settings.k), len(decided))
        figures["proving_mean_expansions"] = (sum(r["expansions"] for r in recs) / len(recs), len(recs))
        figures["proving_mean_seconds"] = (sum(r["seconds"] for r in recs) / len(recs), len(recs))
        unverified = sum(1 for r in recs if not r["errors"] and r.get("unverified"))
        figures["proving_errors"] = (float(len(recs) - len(decided) - unverified), len(recs))
        figures["proving_unverified"] = (float(unverified), len(recs))
        figures["proving_theorems"] = (float(len(recs)), len(recs))
        for metric, (value, count) in figures.items():
            if value == value:  # nan: no theorem was decided, so there is no pass rate to report
                rows.append({"repo_id": repo, "split": split, "metric": metric, "value": float(value), "count": count})
    return rows


def proof_rows(records: list[dict], run_id: str, checkpoint_id: str, purpose: str) -> list[dict]:
    """Rows for the catalog's `proofs` table (storage/proofs.py), one per theorem proved."""
    return [
        {
            "run_id": run_id,
            "checkpoint_id": checkpoint_id,
            "repo_id": r["repo_id"],
            "theorem_id": r["theorem_id"],
            "file_path": r["file_path"],
            "full_name": r["full_name"],
            "split": r["split"],
            "purpose": purpose,
            "tactics": r["proof"],
            "proof": "\n".join(r["proof"]),
            "checker": r["checker"],
            "axioms": r["axioms"],
            "expansions": r["proof_expansions"],
            "seconds": r["proof_seconds"],
        }
        for r in records
        if r["proof"]
    ]
