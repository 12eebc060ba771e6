"""Proving as an evaluation: a tactic generator's checkpoint tries theorems, and pass@k,
mean expansions, mean seconds and errors are reported per repository and split.

- `select_theorems`: which theorems (typed records, tasks/proving/records.py, which Prefect stores as JSON):
  every split asked, at most `max_theorems` per repository and split, chosen by a fixed
  hash of the theorem id so that every curriculum step tries the same ones; `sorry`
  theorems are left out (they are what `dojoflow prove` is for), and with the `replay`
  backend so are theorems without a traced tactic proof (replay cannot start them).
- `prove_theorems`: one batch, one backend and one generator; `attempts` searches per
  theorem (attempt i reseeded with seed + i); a record per theorem with n, c, the first
  proof found, expansions, seconds and errors.
- `proving_metrics`: metric rows with 95% intervals (tasks/stats.py) and the number of
  theorems each is over. ReProver's rule (lean-dojo/ReProver, `prover/evaluate.py`): only
  theorems that fail to start are discarded (`proving_not_started`); a crash during search
  counts as a failure, and a theorem proved by any attempt counts as proved; theorems with an
  attempt that ended in an error are counted beside pass@k (`proving_errors`), and theorems
  that cannot be tried at all (no statement for a Lean backend) in `proving_untried`. Pass
  metrics are named after the checker that decided them: `replay_pass@1` when replay did,
  `repl_pass@1` when Lean did; `baseline_replay_pass@1` is the closing-tactics baseline
  (tasks/generate/baseline.py) searched the same way on the same theorems.
- `theorem_rows`: the per-theorem rows behind those aggregates (storage/theorem_results.py).

    python -c "help('tasks.proving.evaluate')"
"""

from __future__ import annotations

import os
import socket
from collections import defaultdict
from pathlib import Path

import pyarrow.compute as pc

from storage.errors import InputError
from storage.ids import theorem_id, unit_interval
from tasks.compute import gpu_seconds, tokens_generated
from tasks.lean.backend import TheoremSpec
from tasks.lean.closing import close_quickly
from tasks.metric_registry import register_metric
from tasks.search import SearchBudget, best_first_search_many, whole_proof_search
from tasks.search.pass_at_k import pass_at_k
from tasks.stats import interval
from tasks.trainers.base import Metric

from .config import ProvingSettings
from .records import SearchRecord, Selection, TheoremToTry, Untried

# The search's sizes and costs beside pass@k (declared in tasks/search/pass_at_k.py), for the
# model and the baseline (tasks/metric_registry.py). None has a direction: no skill, never forgotten.
for _prefix in ("", "baseline_"):
    for _name, _kind, _unit in (
        ("errors", "count", "theorems"), ("not_started", "count", "theorems"), ("unverified", "count", "theorems"),
        ("theorems", "count", "theorems"), ("untried", "count", "theorems"), ("tokens", "cost", "tokens"),
        ("gpu_seconds", "cost", "seconds"), ("mean_seconds", "cost", "seconds"),
        ("mean_expansions", "cost", "expansions"),
    ):  # fmt: skip
        register_metric(f"{_prefix}proving_{_name}", direction=None, kind=_kind, unit=_unit)

RECORD_VERSION = 4  # of the records `prove_theorems` returns: part of their cache key (tasks/prefect_tasks/proving.py)
PROVING = "proving"  # the `trainer` column of proving metrics: they score the generator's checkpoint by search


def theorem_to_try(spec: TheoremSpec, split: str | None, goals: str, **more) -> TheoremToTry:
    """The theorem `spec` as one to try: its id, its split and the traced goals before its first tactic."""
    theorem = theorem_id(spec.repo_id, spec.file_path, spec.full_name)
    return TheoremToTry(**vars(spec), theorem_id=theorem, split=split, goals=goals, **more)


def spec_of(record: TheoremToTry | dict) -> TheoremSpec:
    """The backend's spec of a record: its own fields, or for a benchmark statement the
    spec it is tried through (tasks/proving/benchmarks.py)."""
    return TheoremToTry.of(record).spec_of()


def initial_goals(store, repo_ids: list[str]) -> dict[tuple[str, str, str], str]:
    """{(repo_id, file_path, full_name): the traced state before the first tactic}."""
    table = store.read_table("tactics", repo_ids, columns=["repo_id", "file_path", "full_name", "idx", "state_before"])
    table = table.filter(pc.field("idx") == 0)
    return {(r["repo_id"], r["file_path"], r["full_name"]): r["state_before"] for r in table.to_pylist()}


def statement_needs(settings: ProvingSettings) -> tuple[bool, dict[str, str] | None]:
    """(whether the backend needs a theorem's statement, the checkouts to read one from), as its
    declaration says (tasks/lean/registry.py). Replay answers from traced states by name; the Lean
    backends elaborate the statement."""
    from tasks.lean.registry import of

    backend = of(settings.backend)
    if not backend.needs_statement:
        return False, None
    return True, backend.checkouts_of(settings.backend)  # none configured: the sample's own sources, or none


def select_theorems(
    store, repo_ids: list[str], split_kind: str, settings: ProvingSettings, snapshot_id: str | None = None
) -> Selection:
    """The theorems a proving evaluation tries, as records (see the module doc), and those
    it cannot try (tasks/proving/records.py).
    With `settings.benchmarks`, the statements of those benchmarks (held by `snapshot_id`,
    the snapshot the checkpoint trained on) too (tasks/proving/benchmarks.py)."""
    from tasks.lean import load_theorems

    sorry = {
        (r["repo_id"], r["full_name"])
        for r in store.read_table("theorems", repo_ids, columns=["repo_id", "full_name", "has_sorry"])
        .filter(pc.field("has_sorry"))
        .to_pylist()
    }
    goals = initial_goals(store, repo_ids)
    need_statement, projects = statement_needs(settings)
    out, untried = [], []
    for split in settings.splits:
        specs = load_theorems(
            store,
            repo_ids,
            split=split,
            split_kind=split_kind,
            tactic_proofs_only=not need_statement,  # replay: only what a traced tactic proof shows
            need_statement=need_statement,
            projects=projects,
            untried=untried,
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
                out.append(theorem_to_try(s, split, goals.get((s.repo_id, s.file_path, s.full_name), "")))
    untried = [Untried.in_store(u) for u in untried if (u["repo_id"], u["full_name"]) not in sorry]
    if settings.benchmarks:
        from .benchmarks import select_benchmark_theorems, snapshot_benchmarks

        benchmarks = snapshot_benchmarks(store, snapshot_id, settings.benchmarks)
        chosen = select_benchmark_theorems(store, settings, benchmarks)
        out, untried = out + list(chosen.theorems), untried + list(chosen.untried)
    return Selection(theorems=out, untried=untried)


def require_theorems(selection: Selection, repo_ids: list[str], settings: ProvingSettings) -> None:
    """An evaluation that selects no theorem fails with the reason, instead of reporting nothing."""
    if selection.theorems:
        return
    untried = selection.untried
    if untried:
        from .summary import untried_sentence

        raise InputError(
            "evaluation.proving",
            f"selected no theorem to try: {untried_sentence(untried)}",
            "configure the repositories' checkouts (`backend.repl.projects`) or use `backend.kind: replay`",
        )
    raise InputError(
        "evaluation.proving",
        f"selected no theorem to try in splits {', '.join(settings.splits)} of {', '.join(repo_ids)}"
        + (
            ""
            if statement_needs(settings)[0]
            else f" ({settings.backend.kind} tries only theorems with a traced tactic proof)"
        ),
        "widen `evaluation.proving.splits`, or evaluate repositories that have such theorems",
    )


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
    baseline: bool = False,
):
    """(backend, generator) for a batch; each fails with a clear error if it cannot work.
    `baseline`: the closing-tactics baseline answers instead of the checkpoint."""
    from tasks.generate import open_generator
    from tasks.generate.baseline import ClosingTacticsGenerator
    from tasks.lean.verified import open_verifier

    if baseline:
        generator = ClosingTacticsGenerator()
    else:
        premises = None
        if settings.generator.kind == "retrieval":
            from tasks.retriever.data import PremiseCorpus

            premises = PremiseCorpus(store.read_table("premises", repo_ids), store.read_table("files", repo_ids))
        generator = open_generator(settings.generator, checkpoint_dir, premises, model_cache_dir)
    try:
        backend = open_verifier(settings.backend, store)
    except BaseException:
        generator.close()
        raise
    return backend, generator


def prove_theorems(
    store,
    settings: ProvingSettings,
    checkpoint_dir: str | None,
    theorems: list[TheoremToTry],
    model_cache_dir: str | Path | None = None,
    baseline: bool = False,
) -> list[SearchRecord]:
    """Search every theorem record `settings.attempts` times; one result record per theorem."""
    if not theorems:
        return []
    theorems = TheoremToTry.all(theorems)
    budget = search_budget(settings)
    specs = [spec_of(t) for t in theorems]
    backend, generator = open_search_tools(
        store,
        settings,
        checkpoint_dir,
        sorted({s.repo_id for s in specs if store.has_repository(s.repo_id)}),  # not a benchmark's statement-only spec
        model_cache_dir,
        baseline,
    )
    runs: list[list] = [[] for _ in specs]
    tokens_before = tokens_generated(generator)
    try:
        for attempt in range(settings.attempts):
            generator.reseed(settings.seed + attempt)
            if settings.mode == "best_first":
                results = best_first_search_many(specs, backend, generator, budget)
            else:
                results = [
                    whole_proof_search(s, backend, generator, budget, goals=t.goals) for s, t in zip(specs, theorems)
                ]
            for i, r in enumerate(results):
                runs[i].append(r)
        tokens = tokens_generated(generator)
    finally:
        generator.close()
        close_quickly(backend)  # without LeanInteract's two full garbage collections (tasks/lean/closing.py)
    searched_by = f"{socket.gethostname()}:{os.getpid()}"  # which worker: provenance, and how runners spread work
    adapter = (getattr(generator, "adapter_status", None) or [None])[0]  # an endpoint's adapter loading, in words
    share = None if tokens is None else (tokens - tokens_before) / len(theorems)  # each theorem's share (ledger)
    return [
        _theorem_record(t, results, backend.name, generator.name, searched_by, settings.attempts, adapter, share)
        for t, results in zip(theorems, runs)
    ]


def _theorem_record(
    theorem: TheoremToTry, results: list, checker: str, generator: str, searched_by: str, attempts: int = 1,
    adapter: str | None = None, tokens: float | None = None,
) -> SearchRecord:  # fmt: skip
    """One theorem's outcome over its attempts. `started`: some attempt got past the start
    (ReProver discards only theorems that fail to start); an attempt that crashed later counts
    as a failed attempt, and a proof found by any attempt counts."""
    proved = next((r for r in results if r.proved), None)
    errors = [r.error for r in results if r.stopped == "error"]
    unverified = [u for r in results for u in r.unverified]
    seconds = sum(r.seconds for r in results) / len(results)
    return SearchRecord(
        **TheoremToTry.of(theorem).model_dump(),
        checker=checker,
        generator=generator,
        started=any(r.started for r in results),
        n=sum(r.attempts for r in results),
        c=sum(r.successes for r in results),
        errors=len(errors),
        # finished proofs the backend cannot verify (tasks/lean/verdict.py), when none is proved
        unverified=len(unverified) if proved is None else 0,
        error=errors[0] if errors else None,
        expansions=sum(r.expansions for r in results) / len(results),
        seconds=seconds,
        stopped=[r.stopped for r in results],
        proof=list(proved.proof) if proved else None,
        axioms=list(proved.axioms) if proved else [],
        proof_expansions=proved.expansions if proved else None,
        proof_seconds=proved.seconds if proved else None,
        proof_states=list(proved.states) if proved else None,  # best-first: goals before each tactic
        searched_by=searched_by,
        adapter=adapter,
        tokens=tokens,
        gpu_seconds=gpu_seconds(seconds * attempts),  # compute (tasks/ledger.py)
    )


def pass_metric(settings: ProvingSettings, k: int, baseline: bool = False, level: str = "") -> str:
    """The name of a pass@k metric: the checker that decided it, with the verdict level of its
    proofs where the records carry one (`repl+kernel_replayed_pass@1`, `repl+elaborator_checked_pass@1`:
    tasks/lean/gold_backend.py), and `baseline_` for the baseline."""
    checker = f"{settings.backend.kind}+{level}" if level else settings.backend.kind
    return f"{'baseline_' if baseline else ''}{checker}_pass@{k}"


def verdict_level(records: list[SearchRecord]) -> str:
    """The verdict level the records' checker names (`repl+kernel_replayed` -> kernel_replayed), or ""."""
    levels = {r.checker.partition("+")[2] for r in records}
    return levels.pop() if len(levels) == 1 else ""


def theorem_scores(record: SearchRecord, settings: ProvingSettings) -> dict[int, float] | None:
    """{k: pass@k} of one theorem (k = 1 and settings.k), None when it never started or when its
    only finished proofs could not be verified (the Dojo: neither a proof nor a failure)."""
    record = SearchRecord.of(record)
    if not record.started or record.unverified:
        return None
    ks = sorted({1, settings.k})
    return {k: pass_at_k(record.n, record.c, k) for k in ks}


def proving_metrics(
    records: list[SearchRecord], settings: ProvingSettings, untried: list[Untried] = (), baseline: bool = False
) -> list[Metric]:
    """Metric rows (tasks/trainers/base.py `Metric`: with their 95% interval and benchmark) per
    repository and split. ReProver's rule: pass@k is over the theorems that started (a crash
    during search is a failure); `proving_not_started`, `proving_errors` (theorems with an
    attempt that ended in an error) and `proving_untried` (no statement) are reported beside it."""
    records, untried = SearchRecord.all(records), Untried.all(untried)
    groups: dict[tuple[str, str], list[SearchRecord]] = defaultdict(list)
    for r in records:
        groups[(r.repo_id, r.split)].append(r)
    missing: dict[tuple[str, str], int] = defaultdict(int)
    for u in untried:
        missing[(u.repo_id, u.split)] += 1
    benchmark = {(r.repo_id, r.split): r.benchmark for r in [*records, *untried] if r.benchmark}
    prefix = "baseline_" if baseline else ""
    rows = []
    for repo, split in sorted(set(groups) | set(missing)):
        recs = groups.get((repo, split), [])
        scored = [sc for sc in (theorem_scores(r, settings) for r in recs) if sc is not None]
        figures: dict[str, tuple] = {}
        for k in sorted({1, settings.k}):
            values = [sc[k] for sc in scored]
            if values:
                metric = pass_metric(settings, k, baseline, verdict_level(recs))
                figures[metric] = (sum(values) / len(values), len(values), interval(values))
        if recs:
            figures[f"{prefix}proving_mean_expansions"] = (sum(r.expansions for r in recs) / len(recs), len(recs))
            figures[f"{prefix}proving_mean_seconds"] = (sum(r.seconds for r in recs) / len(recs), len(recs))
        figures[f"{prefix}proving_errors"] = (float(sum(1 for r in recs if r.errors)), len(recs))
        unverified = sum(1 for r in recs if r.started and r.unverified)
        figures[f"{prefix}proving_not_started"] = (float(len(recs) - len(scored) - unverified), len(recs))
        figures[f"{prefix}proving_unverified"] = (float(unverified), len(recs))
        figures[f"{prefix}proving_theorems"] = (float(len(recs)), len(recs))
        for cost in ("tokens", "gpu_seconds"):  # the ledger's compute; absent where not counted (no GPU, no model)
            if recs and all(getattr(r, cost) is not None for r in recs):
                figures[f"{prefix}proving_{cost}"] = (round(sum(getattr(r, cost) for r in recs), 3), len(recs))
        if not baseline:
            figures["proving_untried"] = (float(missing[(repo, split)]), len(recs) + missing[(repo, split)])
        for metric, (value, count, *ci) in figures.items():
            low, high, method = ci[0] if ci else (None, None, None)
            rows.append(
                Metric(repo, split, metric, float(value), count, low, high, method, benchmark.get((repo, split)))
            )
    return rows


def theorem_rows(
    records: list[SearchRecord], untried: list[Untried], settings: ProvingSettings, baseline: bool = False
) -> list[dict]:
    """Per-theorem rows for the catalog's `theorem_results` table (storage/theorem_results.py):
    every theorem tried (its n, c, pass@1 and pass@k, errors, time) and every theorem that could
    not be tried, with the reason."""
    rows = []
    for r in SearchRecord.all(records):
        sc = theorem_scores(r, settings)
        rows.append(
            {
                **r.model_dump(include={"repo_id", "theorem_id", "file_path", "full_name", "split", "checker"}),
                "generator": r.generator,
                "prover": "baseline" if baseline else "model",
                "status": "proved" if r.c else ("not_started" if sc is None else "failed"),
                "reason": r.error,
                "n": r.n,
                "c": r.c,
                "k": settings.k,
                "pass_at_1": sc[1] if sc else None,
                "pass_at_k": sc[settings.k] if sc else None,
                "errors": r.errors,
                "expansions": r.expansions,
                "seconds": r.seconds,
                "benchmark": r.benchmark,
                "via": r.via,
                "tokens": r.tokens,
                "gpu_seconds": r.gpu_seconds,
            }
        )
    for u in [] if baseline else Untried.all(untried):
        rows.append(
            {
                **u.model_dump(include={"repo_id", "theorem_id", "file_path", "full_name", "split"}),
                "checker": settings.backend.kind,  # never tried: no verdict, no level
                "generator": None,
                "prover": "model",
                "status": "untried",
                "reason": u.reason,
                "n": 0,
                "c": 0,
                "k": settings.k,
                "pass_at_1": None,
                "pass_at_k": None,
                "errors": 0,
                "expansions": 0.0,
                "seconds": 0.0,
                "benchmark": u.benchmark,
                "via": None,
            }
        )
    return rows


def proof_rows(records: list[SearchRecord], run_id: str, checkpoint_id: str, purpose: str) -> list[dict]:
    """Rows for the catalog's `proofs` table (storage/proofs.py), one per theorem proved."""
    return [
        {
            "run_id": run_id,
            "checkpoint_id": checkpoint_id,
            **r.model_dump(include={"repo_id", "theorem_id", "file_path", "full_name", "split"}),
            "purpose": purpose,
            "tactics": list(r.proof),
            "proof": "\n".join(r.proof),
            "checker": r.checker,
            "axioms": list(r.axioms),
            "expansions": r.proof_expansions,
            "seconds": r.proof_seconds,
        }
        for r in SearchRecord.all(records)
        if r.proof
    ]
