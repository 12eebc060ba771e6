"""Whole-proof search as DeepSeek-Prover and Kimina-Prover use it: sample n complete
proofs of a theorem and check each with the backend (`check_proof`) and the verdict rule
(tasks/lean/verdict.py). A proof the backend cannot verify (the Dojo) is kept in
`unverified`, never counted as a success.

Every sampled proof is one attempt, so `SearchResult.attempts` is n and `successes` the
number accepted (pass@k is estimated from them, tasks/search/pass_at_k.py). Proofs not
checked when the wall-clock budget runs out count as failed attempts. A proof holding a
forbidden construct never reaches the backend. `check_in_time` is that checking loop, shared
with whole-proof expert iteration (tasks/expert/whole_proof.py), which keeps several proofs.

    result = whole_proof_search(theorem, backend, generator, SearchBudget(num_tactics=16), goals="⊢ ...")
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

from tasks.generate.base import TacticQuery

from .result import SearchBudget, SearchResult


@dataclass(frozen=True)
class Checked:
    """One sampled proof as the backend saw it: its answer (`check`), or why it has none: a forbidden
    construct kept it from Lean (`forbidden`), or the backend raised (`error`)."""

    proof: str
    check: object = None  # the backend's ProofCheck
    forbidden: str | None = None
    error: str | None = None


def check_in_time(proofs, theorem, backend, timeout_s: float, started: float) -> Iterator[Checked]:
    """Each of `proofs` ((proof, score) pairs) checked by `backend` in turn, until `timeout_s` seconds
    after `started` (a proof not reached is not yielded). A proof holding a forbidden construct never
    reaches the backend; a backend failure is an error, not a rejection."""
    from tasks.lean.guard import forbidden_construct

    for proof, _ in proofs:
        if time.perf_counter() - started >= timeout_s:
            return
        why = forbidden_construct(proof)
        if why is not None:
            yield Checked(proof, forbidden=why)
            continue
        try:
            check = backend.check_proof(theorem, proof)
        except Exception as e:  # noqa: BLE001  (a backend failure is an error, not a rejection)
            yield Checked(proof, error=f"{type(e).__name__}: {e}")
            continue
        yield Checked(proof, check=check)


def whole_proof_search(theorem, backend, generator, budget: SearchBudget, goals: str = "") -> SearchResult:
    """Sample `budget.num_tactics` proofs of `theorem` and check each; the first accepted is kept."""
    from tasks.lean.verdict import judge

    started = time.perf_counter()
    query = TacticQuery(goals=goals or theorem.statement, theorem=theorem)
    proofs = generator.generate_proofs([query], budget.num_tactics)[0]
    found, axioms, rejected, errors, successes, checked, unverified = None, (), [], [], 0, 0, []
    for c in check_in_time(proofs, theorem, backend, budget.timeout_s, started):
        checked, proof, check = checked + 1, c.proof, c.check
        if c.forbidden is not None:
            rejected.append(f"never sent: {c.forbidden}")
            continue
        if c.error is not None or check.error:
            errors.append(c.error or check.error)
            continue
        verdict = judge(check, proof, tuple(budget.allowed_axioms))
        if verdict.proved:
            successes += 1
            if found is None:
                found, axioms = proof, verdict.axioms
        elif verdict.status == "unverified":
            unverified.append(proof)
        else:
            rejected.append(verdict.reason)
    seconds = round(time.perf_counter() - started, 4)
    if found is not None:
        stopped, error = "proved", None
    elif unverified:
        stopped, error = "unverified", None
    elif errors and len(errors) == checked:
        stopped, error = "error", errors[0]
    else:
        stopped, error = ("time" if checked < len(proofs) else "exhausted"), None
    return SearchResult(
        full_name=theorem.full_name,
        stopped=stopped,
        proof=(found,) if found is not None else None,
        expansions=checked,
        seconds=seconds,
        checker=backend.name,
        axioms=axioms,
        error=error,
        rejected=tuple(rejected),
        attempts=budget.num_tactics,
        successes=successes,
        unverified=tuple(unverified),
    )
