"""What the Lean REPL's answers mean: the one place that reads them (tactic steps, whole-proof
checks with their `#print axioms`, sorry, lost states). The transcript test
(tests/lean/test_transcripts.py) runs every answer the REPL's own test suites recorded through
these functions.

The answers arrive as LeanInteract's models (`LeanError`, `CommandResponse`,
`ProofStepResponse`); the shapes and their meaning come from leanprover-community/repl
(`REPL/Main.lean`, `REPL/JSON.lean`) and Lean's `src/Lean/Elab/Print.lean`
(docs/lean-backends.md, "What Lean's answers mean").

    python -c "from tasks.lean.repl_answers import UNKNOWN_IDS; print(UNKNOWN_IDS)"
"""

from __future__ import annotations

from dataclasses import dataclass

from storage.tactic_text import is_sorry

from .backend import SORRY_TACTIC, TacticResult
from .guard import parse_print_axioms

UNKNOWN_IDS = ("Unknown environment.", "Unknown proof state.")
"""REPL/Main.lean's answers for an `env` / `proofState` the process does not hold: after LeanInteract
restarted it (for memory, conformance #2) or it was replaced. Never a verdict on the proof."""

MODULE_REFUSAL = "cannot use `#print axioms` in a `module`"
"""The start of Print.lean's error (lean4#8174 to lean4#13117) for `#print axioms` after a `module` header."""


def is_error_answer(reply) -> bool:
    """`{"message": ...}`: the REPL could not run the request at all (LeanInteract's LeanError)."""
    return not hasattr(reply, "messages")


def stale_reason(reply) -> str | None:
    """The answer says the process does not hold the env or proof state sent: an infrastructure
    failure (retry on a fresh process with the header replayed), never a rejection."""
    if is_error_answer(reply) and reply.message.strip() in UNKNOWN_IDS:
        return reply.message.strip()
    return None


def read_step(reply, tactic: str) -> TacticResult:
    """One `{"tactic", "proofState"}` answer as a TacticResult whose state the caller fills in:
    "state" (goals left), "finished", or "error" (Lean's error, a `sorry`, a metavariable or
    kernel failure). Stale answers must have been taken out before (`stale_reason`)."""
    if is_error_answer(reply):  # upstream/unknown_tactic: "Lean error:\n<input>:1:1: unknown tactic"
        return TacticResult("error", message=reply.message)
    errors = [m.data for m in reply.messages if m.severity == "error"]
    if errors:  # upstream/invalid_tactic: error messages, goals [] and "Incomplete: contains sorry"
        return TacticResult("error", message="\n".join(errors))
    if "sorry" in reply.proof_status or reply.sorries or is_sorry(tactic):  # tactic_mode_sorry, have_by_sorry
        return TacticResult("error", message=SORRY_TACTIC)
    if not reply.goals:
        if reply.proof_status.startswith("Completed"):
            return TacticResult("finished")
        # "Incomplete: contains metavariable(s)" (app_type_mismatch), "Error: kernel type check failed" (self_proof_*)
        return TacticResult("error", message=reply.proof_status)
    return TacticResult("state")


@dataclass(frozen=True)
class CheckReading:
    """A whole-proof command (the proof, then `#print axioms NAME` in the same command) as Lean meant it."""

    accepted: bool  # no error in the declaration's own messages
    messages: tuple[str, ...]  # "severity: data" of the declaration's messages (warnings kept, for the guard)
    axioms: tuple[str, ...] | None  # from `#print axioms`; None if it gave none
    refused_in_module: bool = False  # `#print axioms` refused after a `module` header (conformance #10)
    not_run: str | None = None  # the REPL could not run the command at all (a `{"message"}` answer)


def read_check(reply, name: str | None, print_line: int | None) -> CheckReading:
    """Split a command's answer into the declaration's messages and those of its `#print axioms
    NAME` (the messages on or after `print_line`, the 1-based line of that command; None: none)."""
    if is_error_answer(reply):
        return CheckReading(False, (), None, not_run=reply.message)
    own, axioms, refused = [], None, False
    for m in reply.messages:
        if print_line is not None and m.start_pos.line >= print_line:
            parsed = parse_print_axioms(m.data) if m.severity == "info" else None
            if parsed is not None and parsed[0] == name:
                axioms = parsed[1]
                continue
            if m.severity == "error" and m.data.startswith(MODULE_REFUSAL):
                refused = True
                continue
        # anything else is the declaration's: a proof that does not parse is reported where the
        # next command starts, on the `#print`'s line
        own.append(m)
    accepted = not any(m.severity == "error" for m in own)
    return CheckReading(accepted, tuple(f"{m.severity}: {m.data}" for m in own), axioms, refused)
