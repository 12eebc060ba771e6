"""Which theorems an expert-iteration round searches, one batch's search, and which of its
proofs may be stored as found (docs/expert-iteration.md).

- `PoolRequest`: what choosing a round's pool takes (the pool task's one parameter).
- `select_pool`: the train split of `repo_ids` (and, if asked, its `sorry` theorems), less the
  theorems that have a found proof for their toolchain; val and test are never read.
- `search_batch`: the proving evaluation's search (`tasks/proving/evaluate.py:prove_theorems`)
  on one batch: the same backend, generator, mode and budgets; before searching, a proof found
  for the same theorem at an earlier commit (same statement and toolchain) is checked again by
  the verifier and, if its rule calls it proved, kept without a search.
- `found_rows`: the rows `storage/found_proofs.py` stores: only proofs the verdict rule called
  proved (`judge`, tasks/lean/verdict.py) by a backend that is not a lower bound (`replay`).

    python -c "help('tasks.expert.pool')"
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from storage.found_proofs import carried_candidates
from storage.ids import stable_hash, theorem_id, unit_interval
from storage.tactic_text import NO_GOALS
from tasks.lean.closing import close_quickly
from tasks.proving.config import ProvingSettings
from tasks.proving.records import Pool, SearchRecord, TheoremToTry, Untried

from .config import ExpertIterationSettings


class PoolRequest(BaseModel):
    """What choosing one round's pool takes (`steps.select`, the `expert-pool` task): typed and
    frozen, so Prefect stores it as JSON with the task run and reads it back as this model."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    repo_ids: list[str] = Field(description="The repositories the curriculum step has seen so far.")
    split_kind: str = Field(description="The split kind whose train split is searched (val and test never are).")
    settings: ExpertIterationSettings = Field(description="The `expert_iteration` section (its mode and pool).")
    search: ProvingSettings = Field(description="The search settings the round searches with (backend, mode).")
    step: int = Field(description="The curriculum step.")
    round: int = Field(description="The round of expert iteration, from 1.")


def toolchain_of(store, repo_id: str) -> str:
    """The Lean version a repository was traced with (as the verification cache keys it)."""
    repo = store.repository(repo_id)
    return repo.get("lean_version") or f"unknown toolchain of {repo['url']}@{repo['commit']}"


def statement_hash(statement: str | None) -> str:
    return stable_hash(" ".join((statement or "").split()), 16)


def select_pool(
    store,
    repo_ids: list[str],
    split_kind: str,
    search: ProvingSettings,
    include_sorry: bool,
    max_theorems: int | None,
    found: set[tuple[str, str]],
) -> Pool:
    """The theorems to search, how many of the pool hold a proof in `found` ((theorem id,
    toolchain) pairs), and those without a statement for a Lean backend (untried)."""
    import pyarrow.compute as pc

    from tasks.lean import load_theorems
    from tasks.proving.evaluate import initial_goals, statement_needs, theorem_to_try

    sorry = {
        (r["repo_id"], r["full_name"])
        for r in store.read_table("theorems", repo_ids, columns=["repo_id", "full_name", "has_sorry"])
        .filter(pc.field("has_sorry"))
        .to_pylist()
    }
    need_statement, projects = statement_needs(search)
    untried: list[dict[str, str | None]] = []
    specs = load_theorems(
        store,
        repo_ids,
        split="train",  # the only split searched for training data
        split_kind=split_kind,
        need_statement=need_statement,
        projects=projects,
        untried=untried,
    )
    toolchains = {r: toolchain_of(store, r) for r in repo_ids}
    goals = initial_goals(store, repo_ids)
    chosen, proved = [], 0
    for s in specs:
        tid = theorem_id(s.repo_id, s.file_path, s.full_name)
        if (s.repo_id, s.full_name) in sorry and not include_sorry:
            continue
        if (tid, toolchains[s.repo_id]) in found:
            proved += 1
            continue
        chosen.append(s)
    if max_theorems is not None:
        keep = []
        for repo in repo_ids:
            mine = [s for s in chosen if s.repo_id == repo]
            mine.sort(key=lambda s: unit_interval(theorem_id(s.repo_id, s.file_path, s.full_name)))
            keep += mine[:max_theorems]
        chosen = [s for s in chosen if s in keep]
    records = [
        theorem_to_try(
            s,
            "train",
            goals.get((s.repo_id, s.file_path, s.full_name), ""),
            sorry=(s.repo_id, s.full_name) in sorry,
            toolchain=toolchains[s.repo_id],
        )  # fmt: skip
        for s in chosen
    ]
    untried = [Untried.in_store(u) for u in untried]
    return Pool(theorems=records, proved=proved, untried=[u for u in untried if u.split == "train"])


def _carry_over(store, search: ProvingSettings, theorems: list[TheoremToTry]) -> dict[str, dict]:
    """{theorem_id: record} of `theorems` proved by re-checking a proof found at an earlier commit
    (same url, name, statement and toolchain): the verifier decides again (its cache answers at once
    when the header did not change either), so a proof is carried only if the rule accepts it here."""
    from tasks.lean.verdict import judge
    from tasks.lean.verified import open_verifier
    from tasks.proving.evaluate import spec_of

    by_url: dict[str, list[TheoremToTry]] = {}
    for t in theorems:
        by_url.setdefault(t.url, []).append(t)
    todo = []
    for url, group in by_url.items():
        known = carried_candidates(store, url, [t.full_name for t in group])
        for t in group:
            old = known.get((t.full_name, statement_hash(t.statement), t.toolchain))
            if old is not None and old["theorem_id"] != t.theorem_id:
                todo.append((t, old))
    if not todo:
        return {}
    backend = open_verifier(search.backend, store)
    out = {}
    try:
        for t, old in todo:
            check = backend.check_proof(spec_of(t), old["proof"])
            verdict = judge(check, old["proof"], tuple(search.backend.allowed_axioms))
            if verdict.proved:
                out[t.theorem_id] = {**old, "axioms": list(verdict.axioms), "checker": backend.name}
    finally:
        close_quickly(backend)  # tasks/lean/closing.py
    return out


def search_batch(
    store,
    search: ProvingSettings,
    checkpoint_dir: str | None,
    theorems: list[TheoremToTry],
    model_cache_dir: str | Path,
) -> list[SearchRecord]:
    """One batch of a round: proofs carried from an earlier commit, then a search of the rest.
    One record per theorem (`prove_theorems`' records; a carried one has `carried_from`)."""
    from tasks.proving.evaluate import prove_theorems

    theorems = TheoremToTry.all(theorems)
    carried = _carry_over(store, search, theorems)
    rest = [t for t in theorems if t.theorem_id not in carried]
    records = prove_theorems(store, search, checkpoint_dir, rest, model_cache_dir) if rest else []
    for t in theorems:
        old = carried.get(t.theorem_id)
        if old is not None:
            records.append(
                SearchRecord(
                    **t.model_dump(),
                    checker=old["checker"],
                    proof=old["tactics"],
                    proof_states=[s["state_before"] for s in old["steps"]] if old["steps"] else None,
                    axioms=old["axioms"],
                    proof_expansions=0,
                    carried_from=old["theorem_id"],
                )
            )
    return records


def found_rows(
    records: list[SearchRecord], *, lower_bound: bool, rule_version: str, run_id: str, step: int, round: int,
    checkpoint_id: str,
) -> list[dict]:  # fmt: skip
    """Rows for `found_proofs` from a round's records: proofs only (a record has one only when the
    verdict rule called it proved), none from a lower-bound backend, none outside the train split."""
    if lower_bound:
        return []
    rows = []
    for r in SearchRecord.all(records):
        if not r.proof or r.split != "train":
            continue
        tactics = list(r.proof)
        states = r.proof_states
        steps = None
        if states and len(states) == len(tactics):
            afters = list(states[1:]) + [NO_GOALS]
            steps = [{"state_before": b, "tactic": t, "state_after": a} for b, t, a in zip(states, tactics, afters)]
        elif len(tactics) == 1 and r.goals:  # a one-tactic whole proof: the traced initial state
            steps = [{"state_before": r.goals, "tactic": tactics[0], "state_after": NO_GOALS}]
        rows.append(
            {
                **r.model_dump(include={"theorem_id", "toolchain", "repo_id", "url", "file_path", "full_name"}),
                "split": r.split,
                "statement_hash": statement_hash(r.statement),
                "run_id": run_id,
                "step": step,
                "round": round,
                "checkpoint_id": checkpoint_id,
                "checker": r.checker,
                "rule_version": rule_version,
                "verdict": "proved",
                "tactics": tactics,
                "proof": "\n".join(tactics),
                "steps": steps,
                "axioms": list(r.axioms),
                "expansions": r.proof_expansions,
                "carried_from": r.carried_from,
            }
        )
    return rows
