"""The one rule that says whether a proof is proved, read from Lean's own answers.

Every caller (best-first and whole-proof search, the proving evaluation, `dojoflow prove`,
every GRPO reward) asks `judge(check, proof, allowed_axioms)`. A proof is `proved` only
when all of these were established from what Lean answered, each from the answer to the
command that asks it (never from the proof's text, never from the first message that
looks right):

1. the proof command (the theorem's own file header, then the declaration rebuilt from its
   validated parts with the proof as its tactic block) has no error-severity message and
   no `declaration uses sorry` warning;
2. the statement check (`theorem ALIAS : ∀ BINDERS, TYPE := NAME`, sent after it in the same
   environment, SafeVerify-style) has no error: the constant proves the original statement.
   NAME is the constant the proof command declared, as the statement writes it (resolved in
   the header's namespace), and a theorem whose `full_name` is not that constant is bad input;
3. `#print axioms NAME`, a command of its own, answers an info message about THAT constant
   listing only allowed axioms (default `DEFAULT_ALLOWED_AXIOMS`, a setting).

New `axiom`/`opaque`/`@[implemented_by]` declarations are kept out twice: the pre-filter
(`guard.forbidden_construct`) refuses the commands before Lean, and an axiom the constant
depends on is in rule 3's answer; `implemented_by` and `opaque` only act through the
compiler, whose use shows as `Lean.ofReduceBool`/`Lean.trustCompiler`.

A backend that cannot establish one of these (the Dojo answers no `#print axioms`) gives
no `LeanAnswers`: its verdict is `unverified`, never `proved`, and callers keep it out of
pass@k and rewards (or re-check it with a whole-proof backend, tasks/lean/recheck.py).
`replay` answers from traced transitions, not Lean; its verdicts say `replay`.
Bump `RULE_VERSION` whenever this rule changes: cached verdicts are keyed on it.
See docs/lean-backends.md ("The verdict rule").
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from storage.lean_text import (
    MAX_PROOF_CHARS,
    LeanTextError,
    check_file_path,
    check_name,
    check_text,
    is_sorry,
    name_mismatch,
    parse_statement,
    split_name,
)

from .backend import ProofCheck, TheoremSpec
from .guard import DEFAULT_ALLOWED_AXIOMS, forbidden_construct, parse_print_axioms
from .registry import is_lower_bound
from .repl_answers import MODULE_REFUSAL

RULE_VERSION = "verdict-2026-11-27.1"
"""The version of the rule below; a verification cache keys its verdicts on it."""

SORRY_WARNINGS = (
    "declaration uses `sorry`",
    "declaration uses 'sorry'",
    "proof contains `sorry`",
    "proof contains 'sorry'",
)
"""Lean's sorry warning in both quote styles (recent Lean: backticks; older Lean and LeanDojo: quotes)."""

Status = Literal["proved", "rejected", "unverified", "error"]


@dataclass(frozen=True)
class Message:
    """One message of Lean's answer (the REPL's `{"severity", "pos", "data"}`)."""

    severity: str  # error | warning | info
    text: str
    line: int | None = None  # line of its position in the text sent, when Lean gave one


@dataclass(frozen=True)
class Answer:
    """Lean's answer to one command."""

    messages: tuple[Message, ...] = ()
    refused: str | None = None  # the REPL answered `{"message": ...}` instead of elaborating it


@dataclass(frozen=True)
class LeanAnswers:
    """What Lean answered to the commands of one check, command by command."""

    constant: str  # the name the commands asked about (the theorem's full name)
    proof: Answer
    statement: Answer | None = None  # None: this backend did not ask
    axioms: Answer | None = None  # None: this backend cannot ask (the Dojo)


@dataclass(frozen=True)
class Verdict:
    """Whether a proof counts, why, and what decided it."""

    status: Status
    reason: str
    axioms: tuple[str, ...] = ()
    rule: str = RULE_VERSION
    level: str = ""  # of a proof: kernel_replayed (comparator replayed it) | elaborator_checked; "" otherwise

    @property
    def proved(self) -> bool:
        return self.status == "proved"


def bad_input(theorem: TheoremSpec, proof: str) -> str | None:
    """Why this theorem/proof pair cannot be sent to Lean at all (data or text Lean must not
    see: a NUL, invalid UTF-8, a proof too long, a statement or name that does not parse), or None.
    Backends answer it as `ProofCheck.error`: an error verdict naming the input, no Lean run."""
    try:  # not text at all (invalid UTF-8, NUL, a control character, too long): bad input, an error;
        # text whose reading may differ from Lean's (`canonical_proof`) is the guard's rejection
        check_text(proof, "the proof", MAX_PROOF_CHARS)
    except LeanTextError as e:
        return f"bad input for {theorem.full_name[:120]!r}: {e}"
    return bad_theorem(theorem)


def bad_theorem(theorem: TheoremSpec) -> str | None:
    """Why the theorem's statement, name or file path cannot be made into Lean commands (the
    path names the file whose prefix is the header), or None. The statement must declare
    `full_name` (`name_mismatch`): the verdict is about the constant the proof command declares.
    A theorem from a GRPO theorem file has no repository (no url, commit or file): its header
    is the backend's own (`kimina.header`), so it has no path to check."""
    try:
        parse_statement(theorem.statement).declaration()  # a constant with a type to prove
        check_name(theorem.full_name)
        mismatch = name_mismatch(theorem.statement, theorem.full_name)
        if mismatch is not None:
            raise LeanTextError(f"the statement {mismatch}", "give the statement of the theorem full_name names")
        if theorem.file_path or theorem.url or theorem.commit:
            check_file_path(theorem.file_path)
    except LeanTextError as e:
        return f"bad input for {str(theorem.full_name)[:120]!r}: {e}"
    return None


def judge(check: ProofCheck, proof: str, allowed_axioms=DEFAULT_ALLOWED_AXIOMS) -> Verdict:
    """The verdict on `proof` given the backend's `check` (see the module docstring), at the level
    it was established: a proof the elaborator's answers call proved is `kernel_replayed` when the
    gold checker (comparator, tasks/lean/gold.py) replayed it, a rejection when comparator rejected
    it, an `error` when its run established nothing, and `elaborator_checked` when it did not run."""
    verdict = fast_judge(check, proof, allowed_axioms)
    if verdict.status != "proved" or is_lower_bound(check.checker):
        return verdict
    gold = check.gold
    if gold is None:
        return replace(verdict, level="elaborator_checked", reason=verdict.reason + " (elaborator-checked only)")
    if gold.status == "accepted":
        kernels = " and ".join(gold.kernels) or "lean"
        return replace(verdict, level="kernel_replayed", reason=f"{verdict.reason}; replayed by the {kernels} kernel")
    if gold.status == "rejected":
        return Verdict("rejected", f"the kernel replay ({gold.checker}) rejects it: {gold.category}: {gold.reason}")
    return Verdict("error", f"not established: the kernel replay ({gold.checker}) failed: {gold.reason}")


def fast_judge(check: ProofCheck, proof: str, allowed_axioms=DEFAULT_ALLOWED_AXIOMS) -> Verdict:
    """Rules 1 to 3 on the fast backend's answers, before any kernel replay."""
    if check.error is not None:
        return Verdict("error", f"not checked ({check.checker} failed: {check.error})")
    why = forbidden_construct(proof)
    if why is not None:
        return Verdict("rejected", f"forbidden construct: {why}")
    if is_sorry(proof):
        return Verdict("rejected", "the proof uses `sorry`, `admit` or `sorryAx`")
    if not check.accepted:
        first = next(iter(check.messages), "")
        return Verdict("rejected", f"rejected by {check.checker}" + (f": {first}" if first else ""))
    if is_lower_bound(check.checker):  # traced transitions, no Lean: the verdict says so
        return Verdict(
            "proved", f"accepted by {check.checker}, which runs no Lean (a lower bound of what Lean accepts)"
        )
    if check.answers is None:
        return Verdict("unverified", f"{check.checker} cannot report the statement and axioms Lean checked")
    return decide(check.answers, allowed_axioms, check.checker)


def decide(answers: LeanAnswers, allowed_axioms=DEFAULT_ALLOWED_AXIOMS, checker: str = "lean") -> Verdict:
    """Rules 1 to 3 of the module docstring, on Lean's answers command by command."""
    first = proof_rule(answers.proof, checker)
    if first is not None:
        return first
    if answers.statement is None:
        return Verdict("unverified", f"{checker} did not check the proved constant's statement")
    stmt = answers.statement
    stmt_errors = [m.text for m in stmt.messages if m.severity == "error"] + ([stmt.refused] if stmt.refused else [])
    if stmt_errors:
        return Verdict("rejected", f"the proved constant is not the original statement: {stmt_errors[0]}")
    if answers.axioms is None:
        return Verdict("unverified", f"{checker} cannot report the axioms of {answers.constant}")
    late = [m.text for m in answers.axioms.messages if m.severity == "error" and not m.text.startswith(MODULE_REFUSAL)]
    if late:  # e.g. a proof that does not parse, reported where the next command starts
        return Verdict("rejected", f"Lean reports an error: {late[0]}")
    axioms = read_axioms(answers.constant, answers.axioms)
    if axioms is None and any(m.text.startswith(MODULE_REFUSAL) for m in answers.axioms.messages):
        return Verdict("error", f"`#print axioms {answers.constant}` was refused in a `module`")
    if axioms is None:
        # Lean answered the proof command and then not the checks after it: the proof stopped
        # them (`#exit` ends the file's elaboration, src/Lean/Elab/Frontend.lean). A rejection,
        # paid as one, never "no verdict" (issue 27 §3).
        return Verdict(
            "rejected", f"`#print axioms {answers.constant}` gave no axiom list for it: the proof stopped Lean's checks"
        )
    outside = [a for a in axioms if a not in set(allowed_axioms)]
    if outside:
        return Verdict("rejected", f"depends on axioms outside the allow-list: {', '.join(outside)}", axioms)
    listed = f"; axioms: {', '.join(axioms)}" if axioms else "; no axioms"
    return Verdict("proved", f"accepted by {checker}{listed}", axioms)


def proof_rule(proof: Answer, checker: str = "lean") -> Verdict | None:
    """Rule 1 on the proof command's answer: the rejection it calls for, or None if it passes."""
    if proof.refused is not None:
        return Verdict("rejected", f"{checker} refused the proof command: {proof.refused}")
    errors = [m.text for m in proof.messages if m.severity == "error"]
    if errors:
        return Verdict("rejected", f"Lean reports an error: {errors[0]}")
    if any(m.severity == "warning" and any(w in m.text for w in SORRY_WARNINGS) for m in proof.messages):
        return Verdict("rejected", "Lean reports that the declaration uses `sorry`")
    return None


def read_axioms(constant: str, answer: Answer) -> tuple[str, ...] | None:
    """The axioms listed in the answer to `#print axioms constant`: the one info message about
    that constant, or None when there is none, more than one, or an error."""
    if answer.refused is not None or any(m.severity == "error" for m in answer.messages):
        return None
    found = []
    for m in answer.messages:
        parsed = parse_print_axioms(m.text) if m.severity == "info" else None
        if parsed is not None and same_constant(parsed[0], constant):
            found.append(parsed[1])
    return found[0] if len(found) == 1 else None


def same_constant(printed: str, asked: str) -> bool:
    """Whether Lean's printed name is the constant asked about. Lean prints the full name; the
    question may be relative to the header's namespace, so the asked parts end the printed ones
    (a private constant's `_private.Module.0.` prefix included)."""
    p, a = split_name(printed), split_name(asked)
    while a and a[0] == "_root_":
        a = a[1:]
    return bool(a) and p[-len(a) :] == a


def messages_of(reply_messages) -> tuple[Message, ...]:
    """`Message`s from a REPL reply's `messages`: the wire's dicts (`pos`), or LeanInteract's
    `Message` objects (`start_pos`)."""
    out = []
    for m in reply_messages or ():
        if isinstance(m, dict):
            severity, data, pos = m.get("severity"), m.get("data"), m.get("pos")
            line = pos.get("line") if isinstance(pos, dict) else None
        else:
            severity, data, pos = m.severity, m.data, getattr(m, "start_pos", None)
            line = getattr(pos, "line", None)
        out.append(Message(str(getattr(severity, "value", severity)), str(data or ""), line))
    return tuple(out)


def proof_check(
    checker: str, constant: str, proof: Answer, statement: Answer | None = None, axioms: Answer | None = None
) -> ProofCheck:
    """The `ProofCheck` a backend returns from Lean's answers to its commands (None: not asked)."""
    texts = tuple(f"{m.severity}: {m.text}" for m in proof.messages) + ((proof.refused,) if proof.refused else ())
    accepted = proof.refused is None and not any(m.severity == "error" for m in proof.messages)
    listed = (read_axioms(constant, axioms) or ()) if axioms is not None else ()
    return ProofCheck(accepted, checker, texts, listed, answers=LeanAnswers(constant, proof, statement, axioms))


@dataclass(frozen=True)
class Layout:
    """Where the commands of one check text sit (1-based lines): the header ends at
    `header_lines`, the proof command at `proof_last`, then the statement check on `check_line`
    and `#print axioms ALIAS` on `axioms_line`."""

    header_lines: int
    proof_last: int
    check_line: int
    axioms_line: int

    @classmethod
    def of(cls, text: str, alias: str) -> Layout:
        """The layout of a check text ending `...PROOF\nCHECK\n#print axioms ALIAS` whose proof
        command starts after `header_lines`; found from the text itself."""
        lines = text.rstrip("\n").split("\n")
        axioms = max(k for k, line in enumerate(lines, start=1) if line == f"#print axioms {alias}")
        return cls(0, axioms - 2, axioms - 1, axioms)

    def with_header(self, header_lines: int) -> Layout:
        return Layout(header_lines, self.proof_last, self.check_line, self.axioms_line)


def read_answers(checker: str, messages: tuple[Message, ...], layout: Layout, alias: str) -> ProofCheck:
    """Lean's one answer to a check text, split into the answers of its commands by position.
    Servers number lines from different origins (kimina-ast-server 2.1.x from the body after
    its imports, 2.0.x from the snippet): the answer of `#print axioms ALIAS`, which no proof can
    forge (ALIAS is fresh), fixes the origin; every other message is placed by it."""
    anchor = next(
        (m.line for m in messages if m.severity == "info" and m.line is not None and _names_alias(m.text, alias)),
        None,
    )
    shift = 0 if anchor is None else layout.axioms_line - anchor
    placed = tuple(Message(m.severity, m.text, None if m.line is None else m.line + shift) for m in messages)
    h = layout.header_lines
    proof = answer_in(placed, h + 1, layout.proof_last, h)
    if any(m.severity == "error" for m in proof.messages):
        return proof_check(checker, alias, proof)
    statement = answer_in(placed, layout.check_line, layout.check_line)
    axioms = answer_in(placed, layout.axioms_line, layout.axioms_line)
    return proof_check(checker, alias, proof, statement, axioms)


def _names_alias(text: str, alias: str) -> bool:
    parsed = parse_print_axioms(text)
    return parsed is not None and same_constant(parsed[0], alias)


def answer_in(messages: tuple[Message, ...], first: int, last: int, header_lines: int = 0) -> Answer:
    """The answer of the command on lines `first`..`last` (1-based) of a text that held several:
    its own messages, plus errors of the file header (lines up to `header_lines`) and errors
    without a position, which no command can be cleared of. A header's warnings (a helper lemma
    proved by `sorry`) are not this command's."""
    own = []
    for m in messages:
        if m.line is None or m.line <= header_lines:
            if m.severity == "error":
                own.append(m)
        elif first <= m.line <= last:
            own.append(m)
    return Answer(tuple(own))
