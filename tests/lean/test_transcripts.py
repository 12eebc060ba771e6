"""Every answer the Lean REPL recorded in its own test suites, read by Dojoflow as Lean meant it.

The project's shared folder (`../shared/lean-transcripts/`, beside the repository's root here and in
CI) holds the REPL's requests (`X.in`) and real answers (`X.expected.out`), from
leanprover-community/repl and LeanInteract's fork (their README gives the commits and Lean
versions). tests/lean/transcript_classes.tsv says, for each request/answer
pair, what the answer means:

- a proof-state request (`tactic`, or a pickled proof state): `state` (goals left), `finished`
  ("Completed", no goals), `error` (Lean's error, error messages, a metavariable or kernel
  failure status), `sorry` (the step gave up: "contains sorry" or `sorries`), `stale` ("Unknown
  proof state.": the process does not hold the state, an infrastructure failure);
- a command: `accepted`, `sorry` (accepted with "declaration uses `sorry`": not a proof),
  `rejected` (error messages), `stale` ("Unknown environment."), `not_run` (any other
  `{"message"}`: the REPL could not run it).

The table was written from the transcripts and the REPL's documented meaning of its answers
(REPL/Main.lean), not from Dojoflow's code: drafted pair by pair from those rules, and the
non-obvious pairs (metavariables, kernel failures, `have ... := by sorry` with goals left,
`rootGoals` sorries without a warning, `exact?` failures) read one by one. Each answer goes
through LeanInteract's own models (as `AutoLeanServer.run` builds them) and then through
Dojoflow's readers (tasks/lean/repl_answers.py) and the verdict's rule on the proof command
(tasks/lean/verdict.py `proof_rule`).

    PYTHONPATH=$PWD python -m pytest tests/lean/test_transcripts.py -q
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tasks.lean.backend import SORRY_TACTIC
from tasks.lean.repl_answers import MODULE_REFUSAL, is_error_answer, read_step, stale_reason
from tasks.lean.verdict import Answer, Layout, judge, messages_of, proof_rule, read_answers, read_axioms

HERE = Path(__file__).resolve().parent
TRANSCRIPTS = HERE.parents[2] / "shared" / "lean-transcripts"  # read in place, not copied
TABLE = HERE / "transcript_classes.tsv"


def _chunks(text: str) -> list[str]:
    """JSON objects separated by blank lines, as the REPL reads requests and writes answers."""
    out, buf = [], []
    for line in text.split("\n"):
        if line.strip():
            buf.append(line)
        elif buf:
            out.append("\n".join(buf))
            buf = []
    if buf:
        out.append("\n".join(buf))
    return out


def _pairs() -> dict[tuple[str, int], tuple[dict, dict]]:
    pairs = {}
    for inp in sorted(TRANSCRIPTS.rglob("*.in")):
        out = inp.with_name(inp.name.removesuffix(".in") + ".expected.out")
        if not out.exists():  # a few transcripts have no recorded answers
            continue
        name = str(inp.relative_to(TRANSCRIPTS)).removesuffix(".in")
        # strict=False: some requests carry raw line breaks inside strings, which the REPL accepts
        requests = [json.loads(r, strict=False) for r in _chunks(inp.read_text(encoding="utf-8"))]
        answers = [json.loads(a, strict=False) for a in _chunks(out.read_text(encoding="utf-8"))]
        for i, (request, answer) in enumerate(zip(requests, answers)):
            pairs[(name, i)] = (request, answer)
    return pairs


def _table() -> dict[tuple[str, int], tuple[str, str]]:
    rows = {}
    for line in TABLE.read_text(encoding="utf-8").splitlines():
        if line.startswith("#") or not line.strip():
            continue
        name, index, kind, cls = line.split("\t")
        rows[(name, int(index))] = (kind, cls)
    return rows


PAIRS = _pairs()
TABLE_ROWS = _table()


def _model(request: dict, answer: dict, step: bool):
    """The answer as LeanInteract's `AutoLeanServer.run` hands it to Dojoflow."""
    from lean_interact.interface import CommandResponse, LeanError, ProofStepResponse

    if set(answer) == {"message"} or answer == {}:
        return LeanError.model_validate(answer)
    return (ProofStepResponse if step else CommandResponse).model_validate(answer)


def _classify(request: dict, answer: dict, kind: str) -> str:
    reply = _model(request, answer, kind == "step")
    if stale_reason(reply) is not None:
        return "stale"
    if kind == "step":
        result = read_step(reply, request.get("tactic", ""))
        if result.status == "error" and result.message == SORRY_TACTIC:
            return "sorry"
        return result.status
    if is_error_answer(reply):
        return "not_run"
    verdict = proof_rule(Answer(messages_of(reply.messages)))
    if verdict is None:
        return "accepted"
    return "rejected" if verdict.reason.startswith("Lean reports an error") else "sorry"


def test_the_table_covers_every_recorded_pair():
    assert set(TABLE_ROWS) == set(PAIRS)
    assert len(PAIRS) > 400
    kinds = {(kind, cls) for kind, cls in TABLE_ROWS.values()}
    # every class occurs, so no reading is left untested
    for expected in ("state", "finished", "error", "sorry", "stale"):
        assert ("step", expected) in kinds
    for expected in ("accepted", "sorry", "rejected", "stale"):
        assert ("command", expected) in kinds


def test_every_recorded_answer_is_read_as_lean_meant_it():
    wrong = []
    for key, (request, answer) in sorted(PAIRS.items()):
        kind, expected = TABLE_ROWS[key]
        got = _classify(request, answer, kind)
        if got != expected:
            wrong.append(f"{key[0]} #{key[1]} ({kind}): expected {expected}, read {got}")
    assert not wrong, "\n".join(wrong)


# `#print axioms` answers: none are in the transcripts, so these are Lean's own format
# (src/Lean/Elab/Print.lean: `printAxiomsOf` and `elabPrintAxioms`), one case per line.
PRINT_AXIOMS = [
    # (message severity, message text, the axioms read, refused in a module)
    ("info", "'NatBasics.add_zero'' does not depend on any axioms", (), False),
    (
        "info",
        "'T' depends on axioms: [propext, Classical.choice, Quot.sound]",
        ("propext", "Classical.choice", "Quot.sound"),
        False,
    ),
    ("info", "'T' depends on axioms: [sorryAx]", ("sorryAx",), False),
    ("info", "'T' depends on axioms: [Lean.ofReduceBool]", ("Lean.ofReduceBool",), False),
    (
        "error",
        "cannot use `#print axioms` in a `module`; consider temporarily removing the `module` header or placing "
        "the command in a separate file",
        None,
        True,
    ),
]


@pytest.mark.parametrize("severity,text,axioms,refused", PRINT_AXIOMS)
def test_print_axioms_answers_in_prints_format_are_read(severity, text, axioms, refused):
    from lean_interact.interface import CommandResponse

    name = "NatBasics.add_zero'" if "add_zero" in text else "T"
    reply = CommandResponse.model_validate(
        {
            "messages": [
                {
                    "severity": severity,
                    "pos": {"line": 3, "column": 0},
                    "endPos": {"line": 3, "column": 6},
                    "data": text,
                }
            ],
            "env": 1,
        }
    )
    # line 1: the declaration, line 2: the statement check, line 3: `#print axioms NAME`
    check = read_answers("repl", messages_of(reply.messages), Layout(0, 1, 2, 3), name)
    assert check.accepted  # the declaration itself had no error
    assert check.axioms == (axioms or ()) and read_axioms(name, check.answers.axioms) == axioms
    assert any(m.text.startswith(MODULE_REFUSAL) for m in check.answers.axioms.messages) is refused
    assert check.messages == ()  # the #print's own message is not the declaration's


def test_an_error_reported_where_the_next_command_starts_rejects_the_proof():
    """A proof that does not parse gets its error where the next command starts: the statement
    check's line, or the `#print`'s; either way the proof is rejected, never proved."""
    from lean_interact.interface import CommandResponse

    reply = CommandResponse.model_validate(
        {
            "messages": [
                {
                    "severity": "error",
                    "pos": {"line": 2, "column": 0},
                    "endPos": {"line": 2, "column": 6},
                    "data": "unexpected token 'theorem'; expected ')'",
                },
                {
                    "severity": "info",
                    "pos": {"line": 3, "column": 0},
                    "endPos": {"line": 3, "column": 13},
                    "data": "'T' depends on axioms: [sorryAx]",
                },
            ],
            "env": 1,
        }
    )
    check = read_answers("repl", messages_of(reply.messages), Layout(0, 1, 2, 3), "T")
    assert judge(check, "exact (h").status == "rejected" and check.axioms == ("sorryAx",)
    moved = {
        **reply.model_dump(),
        "messages": [{**m, "pos": {"line": 3, "column": 0}} for m in reply.model_dump()["messages"]],
    }
    check = read_answers("repl", messages_of(CommandResponse.model_validate(moved).messages), Layout(0, 1, 2, 3), "T")
    assert judge(check, "exact (h").status == "rejected"
