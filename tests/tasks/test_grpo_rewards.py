"""Lean-decided rewards (tasks/grpo/rewards.py) against the replay backend on the sample's traced
proofs, and against small backend doubles where a test needs Lean to say something replay cannot
(accept a `sorry` proof, report axioms, fail). No Lean runs here: replay answers from traced data.

    PYTHONPATH=$PWD HF_HUB_OFFLINE=1 .venv/bin/python -m pytest tests/tasks/test_grpo_rewards.py -q
"""

from __future__ import annotations

import json
import threading

import pytest

from tasks.grpo.config import PRESET_VALUES, GRPOSettings, RewardSettings
from tasks.grpo.data import proof_prompt, spec_json
from tasks.grpo.rewards import (
    FormatReward,
    LeanProofReward,
    LeanRewarder,
    LeanTacticReward,
    OverlongReward,
    ProgressReward,
    build_reward_functions,
    count_goals,
    proof_of,
)
from tasks.lean import BackendSettings, ProofCheck, TacticResult, open_backend, theorem_spec
from tasks.lean.verdict import Message
from tests.doubles.lean_answers import lean_answered
from tests.doubles.sample_store import sample_store

THEOREM = "ListLemmas.rev_snoc_snoc"  # rw [rev_snoc]; rw [rev_snoc]
STEP = "rw [rev_snoc]"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return sample_store(tmp_path_factory.mktemp("home"))


@pytest.fixture(scope="module")
def spec(store):
    repo = next(r["repo_id"] for r in store.repositories() if r["name"] == "ListLemmas")
    return theorem_spec(store, repo, THEOREM)


class Counting:
    """Delegates to a backend and counts the calls that reach it."""

    def __init__(self, inner):
        self.inner, self.name, self.calls = inner, inner.name, []

    def start(self, theorem):
        self.calls.append(("start", None))
        return self.inner.start(theorem)

    def run_tactic(self, theorem, state, tactic):
        self.calls.append(("run_tactic", tactic))
        return self.inner.run_tactic(theorem, state, tactic)

    def check_proof(self, theorem, proof):
        self.calls.append(("check_proof", proof))
        return self.inner.check_proof(theorem, proof)

    def close(self):
        pass


@pytest.fixture()
def replay(store):
    backend = Counting(open_backend(BackendSettings(kind="replay"), store))
    yield backend


def tactic_call(rewarder, spec, prefix, completions, **kw):
    n = len(completions)
    return LeanTacticReward(rewarder)(
        prompts=[None] * n,
        completions=completions,
        theorem=[spec_json(spec)] * n,
        prefix=[json.dumps(prefix)] * n,
        **kw,
    )


def proof_call(rewarder, spec, completions, **kw):
    n = len(completions)
    return LeanProofReward(rewarder)(prompts=[None] * n, completions=completions, theorem=[spec_json(spec)] * n, **kw)


def test_lean_tactic_rewards_against_replay(replay, spec):
    s = RewardSettings(valid_step=0.1, goal_drop_bonus=0.3, error_penalty=-0.2)
    rewarder = LeanRewarder(replay, s)
    metrics = {}
    got = tactic_call(
        rewarder,
        spec,
        [],
        [STEP, "simp", [{"role": "assistant", "content": STEP}]],
        log_metric=lambda k, v: metrics.setdefault(k, v),
    )
    # valid and state-changing, same number of goals: a step, no proof, nothing paid (issue 27,
    # was valid_step); not traced: an error
    assert got == [0.0, -0.2, 0.0]
    assert metrics["lean/lean_tactic_accepted"] == 0.0
    rewarder.close()


def test_lean_tactic_finishing_the_proof_gets_finished(replay, spec):
    rewarder = LeanRewarder(replay, RewardSettings(finished=1.0))
    metrics = {}
    assert tactic_call(
        rewarder, spec, [STEP], [" rw [rev_snoc]\n", "simp"], log_metric=lambda k, v: metrics.setdefault(k, v)
    ) == [1.0, -0.1]
    assert metrics["lean/lean_tactic_accepted"] == 0.5
    assert count_goals("no goals") == 0 and count_goals("⊢ a\n\n⊢ b") == 2 and count_goals("h : x\n⊢ a") == 1
    rewarder.close()


def test_a_closed_goal_is_paid_only_through_the_finished_proof_with_a_backend_double(spec):
    from tasks.lean.backend import ProofState

    class TwoGoals:
        """Start: two goals; 'close_one' closes one; 'rewrite' changes one; 'done' finishes;
        'same' changes nothing."""

        name = "double"

        def start(self, theorem):
            return TacticResult("state", ProofState("0", "⊢ a\n\n⊢ b"))

        def run_tactic(self, theorem, state, tactic):
            return {
                "close_one": TacticResult("state", ProofState("1", "⊢ b")),
                "rewrite": TacticResult("state", ProofState("2", "⊢ c\n\n⊢ b")),
                "done": TacticResult("finished"),
                "same": TacticResult("state", ProofState("0", "⊢ a\n\n⊢ b")),
                "back": TacticResult("state", ProofState("0", "⊢ a\n\n⊢ b")),
                "slow": TacticResult("timeout", message="timed out"),
            }.get(tactic, TacticResult("error", message="unknown tactic"))

        def check_proof(self, theorem, proof):  # the finished proof, as Lean answers a clean one
            return lean_answered(theorem.full_name, ("propext",))

        def close(self):
            pass

    s = RewardSettings(finished=1.0, valid_step=0.1, goal_drop_bonus=0.3, error_penalty=-0.2, timeout_penalty=-0.05)
    rewarder = LeanRewarder(TwoGoals(), s)
    got = tactic_call(rewarder, spec, [], ["close_one", "rewrite", "done", "same", "slow", "bad"])
    # issue 16 review: a goal closed in an unfinished proof is not paid (valid_step nor
    # goal_drop_bonus): nothing judged how it was closed; the finished proof is judged and paid
    # issue 27: a rewrite that closes nothing is a step, and steps are not paid (was valid_step)
    assert got == [0.0, 0.0, 1.0, 0.0, -0.05, -0.2]
    assert rewarder.stats["closed"] == 1
    # from the state after close_one, going back to the start state is a loop: nothing
    assert tactic_call(rewarder, spec, ["close_one"], ["back", "done"]) == [0.0, 1.0]
    assert rewarder.stats["repeated"] == 1 and rewarder.stats["noop"] == 1
    rewarder.close()


def test_a_goal_closed_by_a_sorry_helper_is_not_paid_before_any_verdict(spec):
    """Issue 16 review: goals `⊢ n + 0 = n` and `⊢ True`, `exact helper_with_sorry n` (a header
    lemma proved by `sorry`) closes the first; it was paid valid_step + goal_drop_bonus (0.2)
    with nothing checked. Under every preset it is paid nothing now, and nothing is checked."""
    from tasks.lean.backend import ProofState

    class Helper:
        name = "double"
        checked = []

        def start(self, theorem):
            return TacticResult("state", ProofState("0", "n : Nat\n⊢ n + 0 = n\n\n⊢ True"))

        def run_tactic(self, theorem, state, tactic):
            return TacticResult("state", ProofState("1", "⊢ True"))

        def check_proof(self, theorem, proof):
            self.checked.append(proof)
            raise AssertionError("an unfinished proof is not checked")

        def close(self):
            pass

    for preset in PRESET_VALUES:
        rewarder = LeanRewarder(Helper(), RewardSettings(**PRESET_VALUES[preset]))
        assert tactic_call(rewarder, spec, [], ["exact helper_with_sorry n"]) == [0.0], preset
        rewarder.close()
    assert Helper.checked == []


def test_sorry_and_forbidden_tactics_never_reach_the_backend_and_get_no_reward(replay, spec):
    rewarder = LeanRewarder(replay, RewardSettings(error_penalty=-0.1))
    got = tactic_call(rewarder, spec, [], ["sorry", "exact sorry", "admit", "#eval IO.println 1", ""])
    assert got == [-0.1] * 5
    assert not [c for c in replay.calls if c[0] == "run_tactic"]
    rewarder.close()


def test_results_are_cached_by_content(replay, spec):
    rewarder = LeanRewarder(replay, RewardSettings())
    tactic_call(rewarder, spec, [], [STEP, "simp", STEP, STEP])
    first = len(replay.calls)
    assert rewarder.stats["cache_hits"] == 0 and rewarder.stats["checks"] == 2  # duplicates checked once
    tactic_call(rewarder, spec, [], [STEP, "simp"])
    assert len(replay.calls) == first and rewarder.stats["cache_hits"] == 2
    rewarder.close()


def test_completions_are_checked_concurrently(spec):
    """Two checks must be in flight at once for either to return (a barrier, no clock)."""
    from tasks.lean.backend import ProofState

    barrier = threading.Barrier(2, timeout=60)

    class Rendezvous:
        name = "double"

        def start(self, theorem):
            return TacticResult("state", ProofState("0", "⊢ a"))

        def run_tactic(self, theorem, state, tactic):
            barrier.wait()  # raises BrokenBarrierError if the other check never runs alongside
            return TacticResult("finished")

        def check_proof(self, theorem, proof):
            return lean_answered(theorem.full_name)

        def close(self):
            pass

    rewarder = LeanRewarder(Rendezvous(), RewardSettings(workers=2))
    assert tactic_call(rewarder, spec, [], ["a", "b"]) == [1.0, 1.0]
    rewarder.close()


def test_lean_proof_accepts_a_traced_proof_against_replay(replay, spec):
    rewarder = LeanRewarder(replay, RewardSettings(error_penalty=-0.1))
    metrics = {}
    got = proof_call(
        rewarder,
        spec,
        [f"{STEP}\n{STEP}", f"by\n  {STEP}\n  {STEP}", "simp", f"{STEP}"],
        log_metric=lambda k, v: metrics.setdefault(k, v),
    )
    assert got == [1.0, 1.0, -0.1, -0.1]
    assert metrics["lean/lean_proof_accepted"] == 0.5
    rewarder.close()


def test_lean_proof_partial_credit_is_for_goals_closed_never_for_steps(replay, spec):
    """Issue 27: `rw [rev_snoc]` runs but closes no goal (it was paid partial_step as a step that ran)."""
    rewarder = LeanRewarder(replay, RewardSettings(error_penalty=-0.1, partial_credit=True, partial_step=0.05))
    assert proof_call(rewarder, spec, [f"{STEP}\nsimp", "simp"]) == [pytest.approx(-0.1), pytest.approx(-0.1)]
    rewarder.close()


class AcceptsEverything:
    """A backend double that accepts every proof, as Lean does a proof through `sorry` (with a
    warning): its answers are Lean's, command by command (tests/doubles/lean_answers.py)."""

    name = "double"

    def __init__(self, axioms=(), messages=("declaration uses `sorry`",), error=None):
        self.axioms, self.messages, self.error, self.checked = axioms, messages, error, []

    def check_proof(self, theorem, proof):
        self.checked.append(proof)
        if self.error is not None:
            return ProofCheck(False, self.name, error=self.error)
        said = tuple(Message("warning", m, 1) for m in self.messages)
        return lean_answered(theorem.full_name, self.axioms, proof_messages=said)

    def close(self):
        pass


def test_reward_guard_a_sorry_proof_the_double_accepts_still_gets_nothing(spec):
    binary = RewardSettings(**PRESET_VALUES["binary"])
    double = AcceptsEverything(axioms=("sorryAx",))
    rewarder = LeanRewarder(double, binary)
    assert proof_call(rewarder, spec, ["exact sorry", "sorry", "admit"]) == [0.0, 0.0, 0.0]
    assert double.checked == []  # the guard kept them from the backend
    rewarder.close()


def test_reward_guard_axioms_and_warnings_reported_by_lean_are_judged(spec):
    s = RewardSettings(**PRESET_VALUES["binary"])
    # no `sorry` in the text, but Lean says the proof depends on sorryAx / native_decide's axiom
    for axioms in [("sorryAx",), ("Lean.ofReduceBool",), ("myAxiom",)]:
        rewarder = LeanRewarder(AcceptsEverything(axioms=axioms, messages=()), s)
        assert proof_call(rewarder, spec, ["exact foo"]) == [0.0], axioms
    clean = LeanRewarder(AcceptsEverything(axioms=("propext",), messages=()), s)
    assert proof_call(clean, spec, ["exact foo"]) == [1.0]
    warned = LeanRewarder(AcceptsEverything(axioms=(), messages=("declaration uses 'sorry'",)), s)
    assert proof_call(warned, spec, ["exact foo"]) == [0.0]


def test_a_backend_failure_is_no_verdict(spec):
    rewarder = LeanRewarder(AcceptsEverything(error="REPL crashed"), RewardSettings())
    assert proof_call(rewarder, spec, ["exact foo"]) == [None]
    assert rewarder.stats["failure"] == 1
    assert proof_call(rewarder, spec, ["exact foo"]) == [None]  # failures are not cached
    assert rewarder.stats["cache_hits"] == 0


def test_proof_of_strips_the_leading_by():
    assert proof_of(":= by\n  simp\n  rfl") == "  simp\n  rfl"
    assert proof_of("by simp") == "simp"
    assert proof_of("bypass") == "bypass"
    assert proof_prompt("theorem t : 1 = 1 :=") == "theorem t : 1 = 1 := by"
    assert proof_prompt("theorem t : 1 = 1", "open Nat") == "open Nat\n\ntheorem t : 1 = 1 := by"


def test_format_and_overlong_rewards():
    tactic = FormatReward("tactic")
    assert tactic(None, ["simp", "simp\nrfl", "", "sorry"]) == [1.0, 0.0, 0.0, 0.0]
    proof = FormatReward("proof")
    assert proof(None, ["simp\nrfl", "```lean\nsimp\n```", "theorem x : True := trivial", "#eval 1"]) == [
        1.0,
        0.0,
        0.0,
        0.0,
    ]
    overlong = OverlongReward(max_completion_length=10, buffer=4)
    # ≤ 6 tokens: 0; 8 tokens: (6 - 8) / 4; 11 tokens: -1
    assert overlong(None, None, completion_ids=[[1] * 5, [1] * 8, [1] * 11]) == [0.0, -0.5, -1.0]


def test_progress_reward_is_traced_minus_candidate_prediction_with_a_scorer_double():
    class LengthScorer:  # predicted steps remaining = length of the candidate (a stand-in for ProgressScorer)
        def predict(self, rows):
            return [float(len(t)) for _, _, t in rows]

    reward = ProgressReward(LengthScorer())
    got = reward(
        None, ["omega", "simp [a, b, c]", "sorry"], goals=["⊢ a"] * 3, prefix=["[]"] * 3, tactic=["simp [x]"] * 3
    )
    assert got == [8.0 - 5.0, 8.0 - 14.0, 0.0]


def test_reward_names_build_in_order_and_settings_refuse_unknown_rewards():
    funcs = build_reward_functions(["format", "overlong"], "tactic", None, RewardSettings(), 16)
    assert [f.__name__ for f in funcs] == ["format", "overlong"]
    with pytest.raises(ValueError, match="rewards.lean_dream is not a reward function"):
        GRPOSettings(rewards={"lean_dream": 1.0})
    with pytest.raises(ValueError, match="lean_proof checks whole proofs"):
        GRPOSettings(mode="tactic", rewards={"lean_proof": 1.0})
    with pytest.raises(ValueError, match="progress_checkpoint"):
        GRPOSettings(rewards={"progress": 1.0})


def test_presets_fill_reward_settings_but_keep_what_the_user_wrote():
    s = GRPOSettings(reward_preset="shaped")
    assert (s.reward.valid_step, s.reward.error_penalty, s.reward.timeout_penalty) == (0.02, -0.05, -0.02)
    s = GRPOSettings(reward_preset="binary", reward={"valid_step": 0.3})
    assert s.reward.valid_step == 0.3 and s.reward.error_penalty == 0.0


# -- through the Lean REPL double (LeanInteract launches it; no Lean runs) -----------------------

SQUARE_ADD = ["unfold square", "simp only [Nat.add_mul, Nat.mul_add, Nat.two_mul, Nat.mul_comm b a]", "omega"]


def test_rewards_against_repl_double_and_a_sorry_proof_it_accepts_gets_nothing(store, tmp_path):
    """The double accepts `sorry` as Lean does (warning, sorryAx); the reward guard still pays nothing,
    and refused text never reaches the REPL."""
    from tasks.lean import load_theorems
    from tests.doubles.lean_process import make_repl_double

    double = make_repl_double(tmp_path / "double")
    theorem = next(t for t in load_theorems(store) if t.full_name == "NatBasics.square_add")
    backend = open_backend(
        BackendSettings(kind="repl", repl=double.options(), work_dir=str(tmp_path / "work"), sandbox=double.sandbox()),
        store,
    )
    try:
        accepted = backend.check_proof(theorem, "sorry")
        assert accepted.accepted  # Lean's answer to a sorry proof: accepted, with a warning
        rewarder = LeanRewarder(backend, RewardSettings(**PRESET_VALUES["binary"]))
        got = proof_call(
            rewarder, theorem, ["\n".join(SQUARE_ADD), "sorry", "unfold square\nexact sorry", "unfold square\nrfl"]
        )
        assert got == [1.0, 0.0, 0.0, 0.0]
        steps = tactic_call(
            LeanRewarder(backend, RewardSettings(valid_step=0.1, goal_drop_bonus=0.0)),
            theorem,
            [],
            [SQUARE_ADD[0], "rfl", "admit"],
        )
        assert steps == [0.0, -0.1, -0.1]  # a step closes no goal: nothing paid (issue 27)
    finally:
        backend.close()
    sent = [r["request"] for r in double.requests()]
    assert sum("exact sorry" in r for r in sent) == 0 and sum('"tactic": "admit"' in r for r in sent) == 0
