"""Best-first proof search as ReProver defines it (lean-dojo/ReProver, `prover/proof_search.py`).

A node is a proof state reached by a sequence of tactics; its priority is the sum of
those tactics' log-probabilities. The open node with the highest priority is expanded:
the generator proposes `num_tactics` tactics, tried in the order the generator ranks
them; each new state (de-duplicated by Lean's pretty-printed goals) becomes an open
node. The search stops at the first finished proof that the verdict rule
(tasks/lean/verdict.py) calls proved, at the first it can only call unverified (a Dojo
without a re-checker: every proof it finds would be), when no open node is left, or when the expansion or
wall-clock budget runs out.

`best_first_search_many` runs several theorems in lockstep so that each round asks the
generator once for the best open state of every theorem (batched generation, the
point of a batched generator on a GPU). A theorem's `seconds` is the time spent on it:
its own backend calls plus its own share of each generation round it took part in (the
round's time divided by the theorems in it), so a budget means the same whether a theorem
is searched alone or in a batch (charging every theorem the whole round made per-theorem
seconds grow with the batch size: 11 to 73 s against 1.5 s, issue 17).

    from tasks.search import SearchBudget, best_first_search
    result = best_first_search(theorem, backend, generator, SearchBudget(num_tactics=8, max_expansions=32))
"""

from __future__ import annotations

import heapq
import itertools
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tasks.generate.base import TacticQuery

from .result import SearchBudget, SearchResult


@dataclass
class _Node:
    state: Any  # tasks.lean.backend.ProofState
    tactics: tuple[str, ...]
    logprob: float
    goals: tuple[str, ...] = ()  # the goals Lean reported before each of `tactics`


@dataclass
class _Search:
    """The mutable progress of one theorem's search (private to one call)."""

    theorem: Any
    budget: SearchBudget
    open: list = field(default_factory=list)
    seen: set = field(default_factory=set)
    expansions: int = 0
    spent: float = 0.0
    rejected: list = field(default_factory=list)
    result: SearchResult | None = None
    counter: Any = field(default_factory=itertools.count)

    def push(self, node: _Node) -> None:
        heapq.heappush(self.open, (-node.logprob, next(self.counter), node))

    def finish(
        self, stopped: str, checker: str, proof=None, axioms=(), error=None, unverified=(), started=True, states=()
    ) -> None:
        self.result = SearchResult(
            full_name=self.theorem.full_name,
            stopped=stopped,
            proof=tuple(proof) if proof is not None else None,
            expansions=self.expansions,
            seconds=round(self.spent, 4),
            checker=checker,
            axioms=tuple(axioms),
            error=error,
            rejected=tuple(self.rejected),
            attempts=1,
            successes=int(stopped == "proved"),
            unverified=tuple(unverified),
            started=started,
            states=tuple(states),
        )


def _timed(search: _Search, fn, *args):
    started = time.perf_counter()
    try:
        return fn(*args)
    finally:
        search.spent += time.perf_counter() - started


def _start(search: _Search, backend) -> None:
    try:
        first = _timed(search, backend.start, search.theorem)
    except Exception as e:  # noqa: BLE001  (a backend failure is this theorem's error, not the batch's)
        search.finish("error", backend.name, error=f"{type(e).__name__}: {e}", started=False)
        return
    if first.status == "finished":  # nothing to prove is not something a prover found
        search.finish("error", backend.name, error="the theorem has no goals to prove", started=False)
    elif first.status != "state" or first.state is None:
        why = first.message or f"could not start the theorem ({first.status})"
        search.finish("error", backend.name, error=why, started=False)
    else:
        search.seen.add(first.state.goals)
        search.push(_Node(first.state, (), 0.0))


def _over_budget(search: _Search) -> str | None:
    if search.spent >= search.budget.timeout_s:
        return "time"
    if search.budget.max_expansions is not None and search.expansions >= search.budget.max_expansions:
        return "expansions"
    return None


def _accept(search: _Search, backend, proof: tuple[str, ...]):
    """The verdict (tasks/lean/verdict.py) on a finished tactic sequence checked as a whole proof."""
    from tasks.lean.verdict import judge

    text = "\n".join(proof)
    check_steps = getattr(backend, "check_steps", None)
    if check_steps is not None:  # a backend that takes one tactic per request (leandojo): no re-splitting
        check = _timed(search, check_steps, search.theorem, tuple(proof))
    else:
        check = _timed(search, backend.check_proof, search.theorem, text)
    verdict = judge(check, text, tuple(search.budget.allowed_axioms))
    if verdict.status in ("rejected", "error"):
        search.rejected.append(("check failed: " if check.error else "") + verdict.reason)
    return verdict


def _expand(search: _Search, backend, node: _Node, candidates: Sequence[tuple[str, float]]) -> None:
    from tasks.lean.guard import forbidden_construct

    search.expansions += 1
    for tactic, logprob in candidates:
        if search.spent >= search.budget.timeout_s:
            return
        why = forbidden_construct(tactic)
        if why is not None:
            search.rejected.append(f"{tactic!r} never sent: {why}")
            continue
        try:
            answer = _timed(search, backend.run_tactic, search.theorem, node.state, tactic)
        except Exception as e:  # noqa: BLE001
            search.finish("error", backend.name, error=f"{type(e).__name__}: {e}")
            return
        if answer.status == "finished":
            proof = node.tactics + (tactic,)
            try:
                verdict = _accept(search, backend, proof)
            except Exception as e:  # noqa: BLE001
                search.finish("error", backend.name, error=f"{type(e).__name__}: {e}")
                return
            if verdict.proved:
                states = node.goals + (node.state.goals,)
                search.finish("proved", backend.name, proof=proof, axioms=verdict.axioms, states=states)
                return
            if verdict.status == "unverified":  # every proof this backend finds would be: stop here
                search.finish("unverified", backend.name, unverified=["\n".join(proof)], error=verdict.reason)
                return
        elif answer.status == "state" and answer.state is not None and answer.state.goals not in search.seen:
            search.seen.add(answer.state.goals)
            goals = node.goals + (node.state.goals,)
            search.push(_Node(answer.state, node.tactics + (tactic,), node.logprob + logprob, goals))


def best_first_search_many(theorems: Sequence, backend, generator, budget: SearchBudget) -> list[SearchResult]:
    """Search every theorem (TheoremSpec) best-first, generating for all open theorems at once."""
    searches = [_Search(t, budget) for t in theorems]
    for s in searches:
        _start(s, backend)
    while True:
        active = []
        for s in searches:
            if s.result is not None:
                continue
            why = _over_budget(s)
            if why is None and not s.open:
                why = "exhausted"
            if why is not None:
                s.finish(why, backend.name)
            else:
                active.append((s, heapq.heappop(s.open)[2]))
        if not active:
            return [s.result for s in searches]
        queries = [TacticQuery(goals=node.state.goals, theorem=s.theorem, prefix=node.tactics) for s, node in active]
        started = time.perf_counter()
        proposals = generator.generate(queries, budget.num_tactics)
        share = (time.perf_counter() - started) / len(active)  # each theorem pays its own share of the round
        for (s, node), candidates in zip(active, proposals):
            s.spent += share
            _expand(s, backend, node, candidates)


def best_first_search(theorem, backend, generator, budget: SearchBudget) -> SearchResult:
    """Best-first search of one theorem (see the module doc)."""
    return best_first_search_many([theorem], backend, generator, budget)[0]
