"""Best-first and whole-proof search, pass@k, and budgets: with the replay backend on the
sample's traced proofs (no Lean: replay decides), scripted generators, and a synthetic
backend whose every tactic opens a new state (for the budgets).

    PYTHONPATH=$PWD HF_HUB_OFFLINE=1 .venv/bin/python -m pytest tests/tasks/test_search.py -q
"""

from __future__ import annotations

import time
from math import comb

import pytest

from storage.errors import InputError
from tasks.lean import BackendSettings, open_backend, theorem_spec
from tasks.lean.backend import ProofCheck, ProofState, TacticResult, TheoremSpec
from tasks.search import SearchBudget, best_first_search, pass_at_k, pass_at_k_mean, whole_proof_search
from tests.doubles.sample_store import sample_store


class ScriptedGenerator:
    """Proposes, for each state, the candidates listed for the first key found in its goals."""

    name = "scripted"

    def __init__(self, table: dict[str, list[tuple[str, float]]], proofs: list[tuple[str, float]] = ()):
        self.table, self.proofs, self.calls = table, list(proofs), []

    def generate(self, queries, k):
        self.calls.append([q.goals for q in queries])
        return [next((v for key, v in self.table.items() if key in q.goals), [])[:k] for q in queries]

    def generate_proofs(self, queries, n):
        return [self.proofs[:n] for _ in queries]

    def reseed(self, seed):
        pass

    def close(self):
        pass


class RecordingBackend:
    """Wraps a backend and keeps every tactic and proof that reached it."""

    def __init__(self, inner):
        self.inner, self.name, self.sent = inner, inner.name, []

    def start(self, theorem):
        return self.inner.start(theorem)

    def run_tactic(self, theorem, state, tactic):
        self.sent.append(tactic)
        return self.inner.run_tactic(theorem, state, tactic)

    def check_proof(self, theorem, proof):
        self.sent.append(proof)
        return self.inner.check_proof(theorem, proof)

    def close(self):
        self.inner.close()


class EndlessBackend:
    """Every tactic opens a new state (`depth N`), after `delay` seconds; nothing ever finishes."""

    name = "endless"

    def __init__(self, delay: float = 0.0):
        self.delay, self.count = delay, 0

    def start(self, theorem):
        return TacticResult("state", ProofState("0", "⊢ depth 0"))

    def run_tactic(self, theorem, state, tactic):
        time.sleep(self.delay)
        self.count += 1
        return TacticResult("state", ProofState(str(self.count), f"⊢ depth {self.count}"))

    def check_proof(self, theorem, proof):
        return ProofCheck(False, self.name)

    def close(self):
        pass


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return sample_store(tmp_path_factory.mktemp("home"))


@pytest.fixture
def replay(store):
    backend = RecordingBackend(open_backend(BackendSettings(kind="replay"), store))
    yield backend
    backend.close()


def nat(store, name):
    rid = next(r["repo_id"] for r in store.repositories() if r["name"] == "NatBasics")
    return theorem_spec(store, rid, f"NatBasics.{name}")


THEOREM = TheoremSpec("r", "u", "c", "F.lean", "T.t", "theorem t : True")


def test_best_first_finds_the_traced_proof_with_replay(store, replay):
    # double_add: `unfold double` then `omega`; wrong tactics are proposed first and fail
    gen = ScriptedGenerator(
        {
            "double (n + m)": [("simp", -0.1), ("unfold double", -0.5)],
            "n + m + (n + m)": [("rfl", -0.2), ("omega", -0.3)],
        }
    )
    result = best_first_search(nat(store, "double_add"), replay, gen, SearchBudget(num_tactics=2, max_expansions=5))
    assert result.proved and result.stopped == "proved"
    assert result.proof == ("unfold double", "omega")
    assert result.checker == "replay" and result.expansions == 2
    assert replay.sent[-1] == "unfold double\nomega"  # the whole proof was checked before it counted


def test_best_first_expands_the_highest_cumulative_logprob_first(store, replay):
    # Two first steps lead to different states; the likelier branch is expanded first even
    # though its child tactic is less likely than the other branch's.
    backend = EndlessBackend()
    gen = ScriptedGenerator({"depth 0": [("a", -1.0), ("b", -0.5)], "depth": [("x", -0.1)]})
    best_first_search(THEOREM, backend, gen, SearchBudget(num_tactics=2, max_expansions=3))
    # expansion 1: depth 0; depth 2 (from `b`, -0.5) beats depth 1 (from `a`, -1.0); its child
    # depth 3 has -0.6, which still beats -1.0
    assert gen.calls == [["⊢ depth 0"], ["⊢ depth 2"], ["⊢ depth 3"]]


def test_states_are_deduplicated_by_goals(store):
    class Merging(EndlessBackend):
        def run_tactic(self, theorem, state, tactic):
            return TacticResult("state", ProofState(tactic, "⊢ same"))

    gen = ScriptedGenerator({"⊢": [("a", -0.1), ("b", -0.2), ("c", -0.3)]})
    result = best_first_search(THEOREM, Merging(), gen, SearchBudget(num_tactics=3, max_expansions=10))
    assert result.stopped == "exhausted" and result.expansions == 2  # the start, then "⊢ same" once


def test_search_stops_at_the_expansion_budget():
    gen = ScriptedGenerator({"⊢": [("a", -0.1), ("b", -0.2)]})
    result = best_first_search(THEOREM, EndlessBackend(), gen, SearchBudget(num_tactics=2, max_expansions=3))
    assert result.stopped == "expansions" and result.expansions == 3 and not result.proved


def test_search_stops_at_the_time_budget():
    gen = ScriptedGenerator({"⊢": [("a", -0.1), ("b", -0.2)]})
    backend = EndlessBackend(delay=0.02)
    result = best_first_search(THEOREM, backend, gen, SearchBudget(num_tactics=2, max_expansions=None, timeout_s=0.3))
    assert result.stopped == "time" and result.seconds >= 0.3
    assert backend.count < 1000  # it stopped rather than running on


def test_a_theorem_the_backend_cannot_start_is_an_error_not_a_failure(store, replay):
    term_mode = nat(store, "double_def")  # a term-mode proof: nothing traced to replay
    result = best_first_search(term_mode, replay, ScriptedGenerator({}), SearchBudget())
    assert result.stopped == "error" and "no traced tactic proof" in result.error


def test_a_forbidden_tactic_never_reaches_the_backend(store, replay):
    gen = ScriptedGenerator({"⊢": [("#eval IO.println 1", -0.1), ("run_cmd pure ()", -0.2), ("simp", -0.3)]})
    result = best_first_search(nat(store, "add_zero'"), replay, gen, SearchBudget(num_tactics=3))
    assert result.proved and result.proof == ("simp",)
    assert not any("#eval" in s or "run_cmd" in s for s in replay.sent)
    assert len(result.rejected) == 2


@pytest.mark.parametrize(
    "bad", [{"num_tactics": 0}, {"max_expansions": 0}, {"max_expansions": -3}, {"timeout_s": 0}, {"timeout_s": -1.0}]
)
def test_budgets_of_zero_or_less_are_refused_before_search(bad):
    with pytest.raises(InputError) as e:
        SearchBudget(**bad)
    assert next(iter(bad)) in str(e.value)


def test_whole_proof_mode_checks_every_sample_and_counts_successes(store, replay):
    theorem = nat(store, "double_add")
    gen = ScriptedGenerator(
        {}, proofs=[("omega", -1.0), ("unfold double\nomega", -2.0), ("sorry", -0.5), ("unfold double; omega", -3.0)]
    )
    result = whole_proof_search(theorem, replay, gen, SearchBudget(num_tactics=4))
    assert result.proved and result.proof == ("unfold double\nomega",)
    assert result.attempts == 4 and result.successes == 2 and result.checker == "replay"
    assert len(result.rejected) == 2  # `omega` alone and `sorry` are rejected


# -- pass@k -------------------------------------------------------------------------------
@pytest.mark.parametrize("n, c, k", [(5, 2, 2), (10, 3, 5), (8, 0, 4), (8, 8, 1), (20, 7, 1), (4, 3, 2)])
def test_pass_at_k_equals_the_binomial_formula(n, c, k):
    expected = 1.0 if n - c < k else 1 - comb(n - c, k) / comb(n, k)
    assert pass_at_k(n, c, k) == pytest.approx(expected)


def test_pass_at_k_by_hand():
    assert pass_at_k(5, 2, 2) == pytest.approx(0.7)  # 1 - C(3,2)/C(5,2) = 1 - 3/10
    assert pass_at_k(10, 3, 5) == pytest.approx(11 / 12)  # 1 - C(7,5)/C(10,5) = 1 - 21/252
    assert pass_at_k(3, 1, 1) == pytest.approx(1 / 3)  # k = 1 is c/n
    assert pass_at_k(4, 3, 2) == 1.0  # n - c < k
    # mean over problems: (0.7 + 0 + 1) / 3
    assert pass_at_k_mean([(5, 2), (5, 0), (5, 5)], 2) == pytest.approx(1.7 / 3)


def test_pass_at_k_refuses_too_few_attempts():
    with pytest.raises(InputError, match="at least 4 attempts"):
        pass_at_k(2, 1, 4)
