"""What the Lean REPL's answers mean: the one place that reads them (tactic steps, sorry, lost
states); whole-proof checks are read by the verdict rule (tasks/lean/verdict.py `read_answers`). The transcript test
(tests/lean/test_transcripts.py) runs every answer the REPL's own test suites recorded through
these functions.

The answers arrive as LeanInteract's models (`LeanError`, `CommandResponse`,
`ProofStepResponse`); the shapes and their meaning come from leanprover-community/repl
(`REPL/Main.lean`, `REPL/JSON.lean`) and Lean's `src/Lean/Elab/Print.lean`
(docs/lean-backends.md, "What Lean's answers mean").

    python -c "from tasks.lean.repl_answers import UNKNOWN_IDS; print(UNKNOWN_IDS)"
"""

from __future__ import annotations

from storage.tactic_text import is_sorry

from .backend import SORRY_TACTIC, TacticResult
from .containment import ANSWER_CAP_MARK

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


def launcher_reason(reply) -> str | None:
    """The sandbox's launcher stopped the process and answered in its place (an answer over
    `sandbox.max_answer_mb`, tasks/lean/containment.py): an infrastructure error with its
    reason, never a verdict on the proof."""
    if is_error_answer(reply) and reply.message.startswith(ANSWER_CAP_MARK):
        return reply.message[len(ANSWER_CAP_MARK) :]
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
