"""Issue 27: one case (at least) per class of ../shared/reference/adversarial-classes.md and per
rule of the issue, with cheat texts written here (the audit's own texts are kept back).

Each text goes through every path as tests/lean/test_guard_probes.py runs them: the real
pre-filter, the repl backend's command and reading code, kimina's snippet and reading code (both
line-numbering schemes), the Dojo's reading, the one verdict rule, and both GRPO Lean rewards
under the defaults and every preset. What Lean would answer is modelled per case from Lean's
source (cited per class): a cheat is modelled as Lean *accepting* it cleanly, the worst case, so
only Dojoflow's own checks stand between it and "proved". Every case must be refused before
Lean, proved nowhere, and paid at most what a plainly wrong proof is paid.

Containment (process count, answer size) is tests/lean/test_containment.py; the property test
of the one text is tests/lean/test_canonical_text.py.

    PYTHONPATH=$PWD .venv/bin/python -m pytest tests/lean/test_adversarial.py -q
"""

from __future__ import annotations

import json

import pytest

from tasks.grpo.config import PRESET_VALUES, RewardSettings
from tasks.grpo.rewards import LeanProofReward, LeanRewarder, LeanTacticReward
from tasks.lean.backend import ProofCheck, ProofState, TacticResult
from tasks.lean.guard import KERNEL_DECIDE_ALLOWED, forbidden_construct
from tasks.lean.verdict import Answer, Message, judge, proof_check
from tests.doubles.lean_answers import lean_answered
from tests.lean.test_guard_probes import (
    CLEAN,
    NAME,
    THEOREM,
    Lean,
    dojo_check,
    kimina_check,
    repl_check,
    rewards,
)

NO_AXIOMS = Lean(axioms=())  # what Lean prints for a lemma added without the kernel's check
WRONG = ("exact wrong_lemma n", Lean(error="unknown identifier 'wrong_lemma'"))  # a plainly wrong proof

# class, id, cheat text, what Lean would answer if the text reached it
CASES = [
    # line-terminator desync: Lean ends a line (and a `--` comment) at LF only (src/Lean/Parser/
    # Basic.lean `whitespace`); what a comment hides to a reader breaking lines elsewhere reaches Lean
    (
        "line-terminator",
        "u2028-skipkernel",
        "simp -- done\u2028set_option debug.skipKernelTC true in\u2028exact bogus",
        NO_AXIOMS,
    ),
    ("line-terminator", "u2029-run_tac", "rfl -- ok\u2029run_tac Lean.Elab.Tactic.closeMainGoal `x", CLEAN),
    ("line-terminator", "cr-exit", "omega -- fine\r#exit", CLEAN),
    ("line-terminator", "nel-eval", "simp -- \x85#eval (IO.println 1 : IO Unit)", CLEAN),
    ("line-terminator", "vt-native", "norm_num -- \x0bnative_decide", CLEAN),
    ("line-terminator", "ff-set_option", "ring_nf --\x0cset_option maxHeartbeats 0 in simp", CLEAN),
    ("line-terminator", "bom", "\ufeffexact bogus", CLEAN),
    ("line-terminator", "bidi-override", "exact h -- \u202e\u2066 native_decide \u2069", CLEAN),
    ("line-terminator", "nbsp", "exact\xa0bogus", CLEAN),
    # the kernel's check switched off from inside a proof: `set_option ... in` is a tactic and a
    # term (src/Lean/Elab/Tactic/BuiltinTactic.lean `elabSetOption`, src/Lean/Elab/BuiltinNotation.lean),
    # `addDecl` skips the kernel under debug.skipKernelTC (src/Lean/AddDecl.lean)
    ("kernel-off", "skipkernel-tactic", "set_option debug.skipKernelTC true in\nexact bogus n", NO_AXIOMS),
    ("kernel-off", "skipkernel-term", "exact (set_option debug.skipKernelTC true in bogus n)", NO_AXIOMS),
    ("kernel-off", "skipkernel-guillemets", "set_option «debug».«skipKernelTC» true in\nexact bogus n", NO_AXIOMS),
    ("kernel-off", "maxheartbeats-0", "set_option maxHeartbeats 0 in\nsimp", CLEAN),
    ("kernel-off", "any-set_option", "set_option pp.all true in\nomega", CLEAN),
    ("kernel-off", "decide-plus-kernel", "decide +kernel", NO_AXIOMS),
    ("kernel-off", "decide-kernel-named", "decide (kernel := true)", NO_AXIOMS),
    ("kernel-off", "decide-kernel-config", "decide (config := { kernel := true })", NO_AXIOMS),
    ("kernel-off", "decide-bang", "decide!", NO_AXIOMS),
    # the aux-lemma cache: `mkAuxLemma` caches by type (src/Lean/Meta/Tactic/AuxLemma.lean): an
    # innocent-looking `decide +kernel` gets back an unchecked lemma of the same type
    ("aux-lemma", "have-kernel-then-use", "have key : n + 0 = n := by decide +kernel\nexact key", NO_AXIOMS),
    ("aux-lemma", "kernel-spaced", "decide + kernel", NO_AXIOMS),
    # interpolated strings with a space: `syntax "s!" interpolatedStr(term)` has no `noWs`
    # (Init/Data/ToString/Macro.lean; `f!` Init/Data/Format/Macro.lean; `throwError`
    # src/Lean/Exception.lean): the hole is elaborated, so it is code
    ("interpolated", "s-bang-space", 'exact (s! "{(IO.Process.exit 0 : IO Unit)}").length', CLEAN),
    ("interpolated", "f-bang-space", 'have := f! "{Lean.ofReduceBool}"\nomega', CLEAN),
    ("interpolated", "throwError-hole", 'first | throwError "{(by native_decide : 1 = 1)}" | simp', CLEAN),
    ("interpolated", "comment-between", 'have := s! /- x -/ "{run_tac pure ()}"\nsimp', CLEAN),
    ("interpolated", "nested-quote", 'have := s!"{id "}" ++ ""} #exit"\nsimp', CLEAN),
    # broken literals: Lean fails mid-token and resumes parsing right there (src/Lean/Parser/
    # Module.lean `parseCommand`), inside what a tolerant reading called a comment or a string
    ("broken-literal", "charlit-dash", "exact 'q-- run_tac Lean.Elab.admitGoal default", CLEAN),
    ("broken-literal", "charlit-unterminated", "exact 'ab' #exit", CLEAN),
    ("broken-literal", "exponent-dash", "exact 1e-- #exit", CLEAN),
    ("broken-literal", "hex-no-digits", "exact 0x-- #exit", CLEAN),
    ("broken-literal", "string-invalid-escape", 'exact "\\q #exit"', CLEAN),
    ("broken-literal", "string-gap-two-newlines", 'exact "a\\\n\n#exit"', CLEAN),
]


def _wrong_rewards(tmp_path, preset):
    tactic, proof, _ = rewards(WRONG[0], WRONG[1], tmp_path, preset)
    return tactic, proof


@pytest.mark.parametrize("cls,case,text,lean", CASES, ids=[f"{c[0]}:{c[1]}" for c in CASES])
def test_adversarial_case_is_refused_proved_nowhere_and_paid_no_more_than_a_wrong_proof(
    cls, case, text, lean, tmp_path
):
    why = forbidden_construct(text)
    assert why is not None, f"{case}: not refused before Lean"
    checks = {
        "repl": repl_check(text, lean, tmp_path),
        "kimina": kimina_check(text, lean),
        "kimina-2.1": kimina_check(text, lean, from_body=True),
        "leandojo": dojo_check(text, lean, tmp_path),
    }
    verdicts = {name: judge(check, text) for name, check in checks.items()}
    assert not any(v.proved for v in verdicts.values()), {n: v.reason for n, v in verdicts.items()}
    for preset in (None, *PRESET_VALUES):
        tactic, proof, calls = rewards(text, lean, tmp_path, preset)
        assert calls == [], (preset, calls)  # never sent to Lean
        wrong_tactic, wrong_proof = _wrong_rewards(tmp_path, preset)
        assert tactic is not None and tactic <= wrong_tactic, (preset, tactic, wrong_tactic)
        assert proof is not None and proof <= wrong_proof, (preset, proof, wrong_proof)


def test_every_class_of_the_reference_has_cases():
    classes = {c[0] for c in CASES}
    assert classes == {"line-terminator", "kernel-off", "aux-lemma", "interpolated", "broken-literal"}
    # reward shaping: the tests below; answer size and process count: test_containment.py


def test_kernel_decide_stays_refused_until_the_gold_check_vouches_for_it():
    """The one switch (guard.KERNEL_DECIDE_ALLOWED) the gold check's helper flips; refused now."""
    assert KERNEL_DECIDE_ALLOWED is False
    assert "gold check" in (forbidden_construct("decide +kernel") or "")


# -- reward shaping (issue 27 §3) -------------------------------------------------------------


class Steps:
    """A backend double whose tactics do what Lean's do to the goal count (the REPL answers each
    `ProofStep` with the goals left, repl-upstream/test/*.expected.out): `skip` leaves the state as
    it was; `have h : True := trivial` adds a hypothesis; `have h : True` opens a second goal,
    which `trivial` closes; `constructor` splits `p ∧ q` into two goals; anything else is an error.
    A whole proof is rejected with Lean's error `message`."""

    name = "double"

    def __init__(self, message="unknown identifier 'wrong_lemma'", error=None, timed_out=False):
        self.message, self.error, self.timed_out = message, error, timed_out

    def start(self, theorem):
        return TacticResult("state", ProofState("0", "n : Nat\n⊢ n + 0 = n"))

    def run_tactic(self, theorem, state, tactic):
        goals = state.goals
        if tactic == "skip":
            return TacticResult("state", ProofState(state.key, goals))
        if tactic == "have h : True := trivial":
            return TacticResult("state", ProofState(state.key + "h", "h : True\n" + goals))
        if tactic == "have h : True":
            return TacticResult("state", ProofState(state.key + "o", "⊢ True\n\n" + goals))
        if tactic == "trivial" and goals.startswith("⊢ True\n\n"):
            return TacticResult("state", ProofState(state.key + "c", goals.removeprefix("⊢ True\n\n")))
        if tactic == "rw [← Nat.add_zero n]":
            return TacticResult("state", ProofState(state.key + "r", goals.replace("⊢ n", "⊢ n + 0", 1)))
        return TacticResult("error", message=self.message)

    def check_proof(self, theorem, proof):
        if self.error is not None:
            return ProofCheck(False, self.name, error=self.error, timed_out=self.timed_out)
        return proof_check(self.name, NAME, Answer((Message("error", self.message, 2),)))

    def close(self):
        pass


def _proof_reward(backend, text, preset):
    rewarder = LeanRewarder(backend, RewardSettings(**PRESET_VALUES[preset]))
    try:
        return LeanProofReward(rewarder)([[]], [text], theorem=[json.dumps(THEOREM.__dict__)])[0]
    finally:
        rewarder.close()


def _tactic_reward(backend, text, preset):
    rewarder = LeanRewarder(backend, RewardSettings(**PRESET_VALUES[preset]))
    try:
        return LeanTacticReward(rewarder)([[]], [text], theorem=[json.dumps(THEOREM.__dict__)], prefix=["[]"])[0]
    finally:
        rewarder.close()


@pytest.mark.parametrize("preset", sorted(PRESET_VALUES))
@pytest.mark.parametrize(
    "padded",
    [
        "skip\nskip\nskip\nskip\nexact wrong_lemma n",  # steps that elaborate, paid per step before
        "have h : True := trivial\nhave h : True := trivial\nexact wrong_lemma n",  # true facts
        "have h : True\ntrivial\nhave h : True\ntrivial\nexact wrong_lemma n",  # goals opened, closed
    ],
)
def test_padding_a_wrong_proof_earns_what_the_wrong_proof_earns(preset, padded):
    assert _proof_reward(Steps(), padded, preset) == _proof_reward(Steps(), WRONG[0], preset)


@pytest.mark.parametrize("preset", sorted(PRESET_VALUES))
@pytest.mark.parametrize("step", ["have h : True := trivial", "skip", "rw [← Nat.add_zero n]"])
def test_a_tactic_that_closes_no_goal_earns_nothing(preset, step):
    assert _tactic_reward(Steps(), step, preset) in (0.0, PRESET_VALUES[preset]["error_penalty"])
    assert _tactic_reward(Steps(), step, preset) <= 0.0


@pytest.mark.parametrize("preset", sorted(PRESET_VALUES))
def test_a_message_saying_timed_out_is_no_timeout(preset):
    """`fail "timed out"` makes Lean's error read "timed out"; only the backend's own flag is a timeout."""
    said = _proof_reward(Steps(message="timed out"), "fail_if_success skip", preset)
    assert said == _proof_reward(Steps(), WRONG[0], preset) == PRESET_VALUES[preset]["error_penalty"]
    hung = _proof_reward(Steps(error="Lean process hung (no answer in 600 s)", timed_out=True), "simp", preset)
    assert hung == PRESET_VALUES[preset]["timeout_penalty"]
    crashed = _proof_reward(Steps(error="Lean process crashed"), "simp", preset)
    assert crashed is None  # an infrastructure failure is no verdict


@pytest.mark.parametrize("preset", sorted(PRESET_VALUES))
def test_a_proof_that_silences_the_checks_is_rejected_and_paid_as_one(preset):
    """After `#exit` Lean elaborates nothing more (src/Lean/Elab/Frontend.lean): the proof
    command's answer is clean and the statement check and `#print axioms` answer nothing."""
    silenced = proof_check("double", NAME, Answer(()), Answer(()), Answer(()))
    verdict = judge(silenced, "simp")
    assert verdict.status == "rejected" and "stopped Lean's checks" in verdict.reason

    class Silenced(Steps):
        def check_proof(self, theorem, proof):
            return silenced

    assert _proof_reward(Silenced(), "simp", preset) == PRESET_VALUES[preset]["error_penalty"]
    clean = lean_answered(NAME, ("propext",))
    assert judge(clean, "simp").proved  # the same shape with the axiom answer present is proved
