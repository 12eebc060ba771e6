"""The Lean process double answers in the shapes the real REPL recorded: for each kind of answer
it gives, the same keys (and the same status strings) as a transcript answer of that kind, and
Dojoflow's readers classify both alike. A double that drifted from the transcripts fails here,
not silently in the backend tests.

    PYTHONPATH=$PWD python -m pytest tests/lean/test_double_shapes.py -q
"""

from __future__ import annotations

import pytest

from storage.sample import SAMPLE_ROOT
from tests.doubles.lean_process import LeanCore, LeanWorld
from tests.lean.test_transcripts import PAIRS, TABLE_ROWS, _classify

AND_SWAP = "theorem and_swap' (p q : Prop) : p ∧ q → q ∧ p"
HEADER = "namespace LogicPuzzles\n"


@pytest.fixture(scope="module")
def world():
    return LeanWorld(SAMPLE_ROOT)


def recorded(name: str, index: int) -> tuple[dict, dict]:
    return PAIRS[(f"repl-upstream/test/{name}", index)]


def keys(answer: dict) -> set:
    return set(answer)


def opened(world):
    """A fresh core with the theorem opened by `sorry`: (core, its reply, the proofState)."""
    core = LeanCore(world)
    env = core.answer({"cmd": HEADER})["env"]
    reply = core.answer({"cmd": f"{AND_SWAP} := by sorry", "env": env})
    return core, reply, reply["sorries"][0]["proofState"]


def same_shape(ours: dict, transcript: tuple[str, int], kind: str) -> None:
    request, theirs = recorded(*transcript)
    assert keys(ours) == keys(theirs), (transcript, ours, theirs)
    for list_key in ("messages", "sorries"):
        for a, b in zip(ours.get(list_key, []), theirs.get(list_key, [])):
            assert keys(a) == keys(b), (transcript, list_key, a, b)
    want = TABLE_ROWS[(f"repl-upstream/test/{transcript[0]}", transcript[1])][1]
    assert _classify(request, ours, kind) == want


def test_a_by_sorry_command_answers_like_invalid_tactic_0(world):
    _, reply, _ = opened(world)
    same_shape(reply, ("invalid_tactic", 0), "command")
    assert reply["messages"][0]["data"] == "declaration uses `sorry`"


def test_a_failing_tactic_answers_like_invalid_tactic_1(world):
    core, _, state = opened(world)
    ours = core.answer({"tactic": "exact h.2", "proofState": state})
    same_shape(ours, ("invalid_tactic", 1), "step")
    assert ours["proofStatus"] == recorded("invalid_tactic", 1)[1]["proofStatus"]


def test_a_good_tactic_answers_like_proof_step(world):
    core, _, state = opened(world)
    step = core.answer({"tactic": "intro h", "proofState": state})
    same_shape(step, ("proof_step", 1), "step")
    step = core.answer({"tactic": "constructor", "proofState": step["proofState"]})
    step = core.answer({"tactic": "exact h.2", "proofState": step["proofState"]})
    done = core.answer({"tactic": "exact h.1", "proofState": step["proofState"]})
    same_shape(done, ("proof_step", 3), "step")


@pytest.mark.parametrize(
    "tactic,transcript",
    [
        ("sorry", ("tactic_mode_sorry", 1)),
        ("exat 42", ("unknown_tactic", 1)),
        ("apply ?succ", ("app_type_mismatch", 4)),
        ("exact LogicPuzzles.and_swap'", ("self_proof_exact_check", 2)),
    ],
)
def test_special_tactic_answers_follow_their_transcripts(world, tactic, transcript):
    core, _, state = opened(world)
    ours = core.answer({"tactic": tactic, "proofState": state})
    same_shape(ours, transcript, "step")
    theirs = recorded(*transcript)[1]
    assert ours.get("proofStatus") == theirs.get("proofStatus") or "message" in ours


def test_unknown_ids_answer_exactly_as_recorded(world):
    core = LeanCore(world)
    assert core.answer(recorded("unknown_environment", 0)[0]) == recorded("unknown_environment", 0)[1]
    core.answer({"cmd": f"{AND_SWAP} := by sorry"})
    assert core.answer({"tactic": "exact 42", "proofState": 1}) == recorded("unknown_proof_state", 1)[1]


def test_an_unfinished_proof_answers_like_have_by_sorry_0(world):
    core = LeanCore(world)
    env = core.answer({"cmd": HEADER})["env"]
    ours = core.answer({"cmd": f"{AND_SWAP} := by\n  intro h", "env": env})
    _, theirs = recorded("have_by_sorry", 0)
    assert keys(ours) == keys(theirs) - {"sorries"}
    assert ours["messages"][0]["severity"] == "error" and ours["messages"][0]["data"].startswith("unsolved goals")
