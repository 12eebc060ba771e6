"""Lean's answers to the commands of one proof check, modelled for backend doubles that
stand in for a whole backend (not for the Lean process): they must still answer what Lean
would, command by command, so that `tasks.lean.verdict.judge` reads real-shaped answers.

Formats, from Lean's source and the REPL's recorded transcripts:
- `#print axioms C` (lean4 src/Lean/Elab/Print.lean, `printAxiomsOf`): one info message,
  `'C' does not depend on any axioms` or `'C' depends on axioms: [a, b]` (the axioms sorted,
  `Name.lt`, printed as a list);
- the sorry warning ``declaration uses `sorry` `` (transcripts: repl-upstream/test/*.expected.out,
  97 times) at the declaration's line;
- a proof that fails: severity `error` (transcripts, e.g. `unsolved goals`).
"""

from __future__ import annotations

from tasks.lean.backend import ProofCheck
from tasks.lean.verdict import Answer, Message, proof_check


def print_axioms_message(constant: str, axioms) -> str:
    if not axioms:
        return f"'{constant}' does not depend on any axioms"
    return f"'{constant}' depends on axioms: [{', '.join(sorted(axioms))}]"


def lean_answered(
    constant: str,
    axioms=(),
    *,
    proof_messages: tuple[Message, ...] = (),
    statement_error: str | None = None,
    checker: str = "double",
) -> ProofCheck:
    """The `ProofCheck` of a proof Lean elaborated: its messages, the statement check (an error
    if `statement_error`), and `#print axioms` of `constant` listing `axioms`."""
    statement = Answer((Message("error", statement_error, 1),) if statement_error else ())
    printed = Answer((Message("info", print_axioms_message(constant, axioms), 1),))
    return proof_check(checker, constant, Answer(tuple(proof_messages)), statement, printed)


SORRY_WARNING = Message("warning", "declaration uses `sorry`", 1)
