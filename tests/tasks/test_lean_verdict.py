"""The one verdict rule (tasks/lean/verdict.py), on Lean's answers command by command.

Lean's answers are modelled in its own formats (tests/doubles/lean_answers.py: Print.lean's
`#print axioms` message, the transcripts' sorry warning); no Lean runs here.

    PYTHONPATH=$PWD python -m pytest tests/tasks/test_lean_verdict.py -q
"""

from __future__ import annotations

import pytest

from tasks.lean.backend import ProofCheck, TheoremSpec
from tasks.lean.guard import DEFAULT_ALLOWED_AXIOMS
from tasks.lean.verdict import (
    RULE_VERSION,
    Answer,
    LeanAnswers,
    Message,
    answer_in,
    bad_input,
    judge,
    proof_check,
    read_axioms,
)
from tests.doubles.lean_answers import SORRY_WARNING, lean_answered, print_axioms_message

T = "NatBasics.add_zero'"
SPEC = TheoremSpec("r", "https://x.invalid/r", "0" * 40, "A.lean", T, "theorem add_zero' (n : Nat) : n + 0 = n", (3, 1))


def test_a_clean_answer_on_every_command_is_proved_with_its_axioms():
    verdict = judge(lean_answered(T, ("propext", "Quot.sound")), "simp")
    assert verdict.proved and verdict.axioms == ("Quot.sound", "propext") and verdict.rule == RULE_VERSION


@pytest.mark.parametrize(
    "check,why",
    [
        (lean_answered(T, ("sorryAx",), proof_messages=(SORRY_WARNING,)), "sorry"),  # the REPL's quotes
        (lean_answered(T, (), proof_messages=(Message("warning", "declaration uses 'sorry'", 1),)), "sorry"),
        (lean_answered(T, ("propext", "sorryAx")), "sorryAx"),  # no warning, but the axiom says it
        (lean_answered(T, ("NatBasics.cheat",)), "NatBasics.cheat"),
        (lean_answered(T, ("propext", "Lean.ofReduceBool")), "Lean.ofReduceBool"),
        (lean_answered(T, ("Lean.trustCompiler",)), "Lean.trustCompiler"),
        (lean_answered(T, statement_error="type mismatch\n  add_zero'\nhas type ..."), "not the original"),
        (proof_check("repl", T, Answer((Message("error", "unsolved goals", 2),))), "unsolved goals"),
        (ProofCheck(False, "repl", (), (), error="Lean process crashed"), "crashed"),
    ],
)
def test_judge_rejects_what_lean_answered_against_the_rule(check, why):
    verdict = judge(check, "exact foo")
    assert not verdict.proved and why in verdict.reason


def test_axioms_are_read_from_the_answer_to_print_axioms_only():
    """A proof that prints a fake `#print axioms` line (trace) is in the proof's answer, not the
    axioms command's; the axioms command's own answer decides (issue 16: kimina took the first)."""
    fake = Message("info", print_axioms_message(T, ()), 2)
    check = proof_check(
        "kimina",
        T,
        Answer((fake,)),
        Answer(()),
        Answer((Message("info", print_axioms_message(T, ("sorryAx",)), 1),)),
    )
    assert check.axioms == ("sorryAx",) and not judge(check, "exact h").proved
    # no answer about THAT constant: no axiom list, so not proved
    other = Answer((Message("info", print_axioms_message("Other.thm", ()), 1),))
    assert read_axioms(T, other) is None
    assert not judge(proof_check("repl", T, Answer(), Answer(), other), "exact h").proved
    # two answers about it (only a forged one could add the second): none is trusted
    twice = Answer((Message("info", print_axioms_message(T, ()), 1), Message("info", print_axioms_message(T, ()), 1)))
    assert read_axioms(T, twice) is None


def test_a_backend_that_cannot_establish_the_rule_says_unverified_never_proved():
    dojo = proof_check("leandojo", T, Answer())  # no statement check, no #print axioms
    assert judge(dojo, "simp").status == "unverified"
    no_axioms = ProofCheck(True, "repl", answers=LeanAnswers(T, Answer(), Answer(), None))
    assert judge(no_axioms, "simp").status == "unverified"
    assert judge(ProofCheck(True, "repl"), "simp").status == "unverified"  # no answers at all


def test_a_header_warning_is_not_the_proofs_and_a_header_error_is():
    """In one snippet (kimina), a helper proved by `sorry` in the header warns on the header's lines."""
    msgs = (Message("warning", "declaration uses `sorry`", 1), Message("info", "x", 3), Message("error", "e", None))
    assert answer_in(msgs[:2], 3, 5, header_lines=2).messages == (msgs[1],)
    assert answer_in(msgs, 3, 5, header_lines=2).messages == (msgs[1], msgs[2])


def test_allow_list_is_a_setting():
    check = lean_answered(T, ("Classical.choice",))
    assert judge(check, "simp").proved
    assert not judge(check, "simp", allowed_axioms=("propext",)).proved
    assert set(DEFAULT_ALLOWED_AXIOMS) == {"propext", "Classical.choice", "Quot.sound"}


@pytest.mark.parametrize(
    "statement,full_name,proof,why",
    [
        ('theorem t : True\n#eval IO.Process.run {cmd := "id"}', "t", "trivial", "#eval"),
        ("theorem t : True", "t\n#eval IO.println 1", "trivial", "control character (U+000A)"),
        ("theorem t : True", "t x", "trivial", "not a Lean name"),
        ("theorem t : True", "t", "simp\x00", "control character (U+0000)"),
        ("theorem t : True", "t", "simp\n" * 5000, "at most 20000"),
        ("theorem t : True", "t", b"simp \xff".decode("utf-8", "surrogateescape"), "control character"),
        ("theorem t (x : Nat : True", "t", "trivial", "brackets"),
        ("set_option debug.skipKernelTC true in\ntheorem t : False", "t", "trivial", "does not start"),
        ("example : True", "t", "trivial", "names no constant"),
        ("theorem t : True := trivial", "t", "trivial", "body"),
    ],
)
def test_bad_input_is_an_error_verdict_naming_it(statement, full_name, proof, why):
    spec = TheoremSpec("r", "u", "c", "A.lean", full_name, statement, (1, 1))
    reason = bad_input(spec, proof)
    assert reason is not None and why in reason and "bad input" in reason


def test_a_file_path_outside_the_repository_is_bad_input():
    spec = TheoremSpec("r", "u", "c", "../../etc/passwd", "t", "theorem t : True", (1, 1))
    assert "leaves the repository" in bad_input(spec, "trivial")


def test_bad_input_reaches_no_lean_and_judges_as_error(tmp_path):
    """Every backend answers bad input before any Lean process: here the repl backend with no
    project configured would fail otherwise."""
    from tasks.lean.config import BackendSettings
    from tasks.lean.repl import ReplBackend

    spec = TheoremSpec("r", "https://x.invalid/r", "c", "A.lean", "t\n#eval 1", "theorem t : True", (1, 1))
    backend = ReplBackend(BackendSettings(kind="repl", work_dir=str(tmp_path)))
    try:
        check = backend.check_proof(spec, "trivial")
        started = backend.start(spec)
    finally:
        backend.close()
    assert check.error and "bad input" in check.error and judge(check, "trivial").status == "error"
    assert started.status == "error" and "bad input" in started.message
    assert not list(tmp_path.iterdir())  # nothing written
