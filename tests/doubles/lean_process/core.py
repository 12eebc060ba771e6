"""The REPL's answers, without a process: `LeanCore.answer(request) -> reply dict`.

The semantics are those of leanprover-community/repl (`REPL/Main.lean`, `REPL/JSON.lean`)
as its own recorded transcripts show them (/work/shared/lean-transcripts/, called
`transcripts/` below; `upstream/X` is `repl-upstream/test/X.expected.out`). What a theorem
*is* (its goals, which tactic leads where, which axioms a known proof uses) comes from
the sample's traced data (world.py). Every reply shape below cites the transcript it copies.

Process-level behaviour (dying, hanging, answering late, garbage, memory growth) is not
here: the core raises `ProcessFault` for the in-band tactics that kill or hang a process,
and the frontends (repl_main.py, and the other helpers' kimina/Dojo frontends) apply the
faults a test asks for through faults.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .world import CRASH, HANG, NATIVE, NO_GOALS, SORRY, LeanWorld, WorldTheorem, norm, split_declaration

# upstream/unknown_environment: `{"cmd": ..., "env": 5}` on a fresh REPL.
UNKNOWN_ENV = {"message": "Unknown environment."}
# upstream/unknown_proof_state: `{"tactic": ..., "proofState": 1}` when only state 0 exists.
UNKNOWN_STATE = {"message": "Unknown proof state."}
# upstream/unknown_tactic: a tactic that does not parse.
UNKNOWN_TACTIC = {"message": "Lean error:\n<input>:1:1: unknown tactic"}
# upstream/tactic_mode_sorry, invalid_tactic and every `by sorry` command in the transcripts.
SORRY_WARNING = "declaration uses `sorry`"
# Lean's src/Lean/Elab/Print.lean, `elabPrintAxioms` (lean4#8174 .. lean4#13117): refused in a `module`.
MODULE_PRINT_AXIOMS = (
    "cannot use `#print axioms` in a `module`; consider temporarily removing the "
    "`module` header or placing the command in a separate file"
)
# upstream/app_type_mismatch (`apply ?succ`) and self_proof_exact_check (`exact ex` on its own sorry).
METAVARIABLES = "Incomplete: contains metavariable(s)"
KERNEL_FAILURE = (
    "Error: kernel type check failed: (kernel) declaration has free variables '[anonymous]', expression: \n  _fvar.2"
)
_DECL = re.compile(
    r"^(?:@\[[^\]]*\]\s*)?(?:(?:private|protected|noncomputable|partial)\s+)*"
    r"(theorem|lemma|def|abbrev|instance|structure|inductive|class)\s+([^\s:({\[]+)"
)


class ProcessFault(Exception):
    """An in-band request that kills (`double_crash`) or hangs (`double_hang`) the Lean process:
    the frontend decides how (exit without answering, sleep forever)."""

    def __init__(self, kind: str):
        super().__init__(kind)
        self.kind = kind  # world.CRASH or world.HANG


def pos(line: int, column: int = 0) -> dict:
    return {"line": line, "column": column}


def message(severity: str, data: str, start: dict, end: dict) -> dict:
    """A message as REPL/JSON.lean writes it (key order as in the transcripts)."""
    return {"severity": severity, "pos": start, "endPos": end, "data": data}


# Dojoflow's statement check (tasks/lean/source.py `statement_check_command`).
STATEMENT_CHECK = re.compile(r"(?:theorem|noncomputable def) (?P<alias>_dojoflow_check_\w+) : .* := (?P<name>\S+)$")


@dataclass
class Env:
    parent: int | None
    decls: dict[str, tuple[str, ...]] = field(default_factory=dict)  # full name -> axioms
    namespaces: tuple[str, ...] = ()  # open `namespace`s after this command (the REPL keeps scopes)
    module: bool = False  # the first command of this env chain began with a `module` header


@dataclass
class State:
    theorem: WorldTheorem | None
    goals: str  # LeanDojo-style pretty state, NO_GOALS when closed
    axioms: frozenset[str]


class LeanCore:
    """One Lean REPL process's memory: environments and proof states, numbered from 0 as the
    REPL numbers them (transcripts: env 0, 1, ...; proofState 0, 1, ...)."""

    def __init__(self, world: LeanWorld):
        self.world = world
        self.envs: list[Env] = []
        self.states: list[State] = []
        self.known_tactics = {
            norm(tac).split(" ")[0] for t in world.theorems.values() for s in t.steps.values() for tac in s
        } | {
            NATIVE,
            SORRY,
            CRASH,
            HANG,
            "exact",
            "apply",
            "intro",
            "rfl",
            "simp",
            "omega",
            "have",
            "show",
            "rw",
            "cases",
            "induction",
            "constructor",
        }

    # -- requests ----------------------------------------------------------------------------
    def answer(self, request: dict) -> dict:
        """The reply to one request (REPL/Main.lean dispatches on `cmd` / `tactic`)."""
        if "cmd" in request:
            return self.command(request["cmd"], request.get("env"))
        if "tactic" in request:
            return self.tactic(request["tactic"], request.get("proofState"))
        # Not modelled (pickling, `path` files): no transcript of ours drives them through Dojoflow.
        return {"message": f"the Lean process double does not implement this request: {sorted(request)}"}

    # -- environments ------------------------------------------------------------------------
    def _new_env(self, parent: int | None, decls: dict, namespaces: tuple[str, ...], module: bool) -> int:
        self.envs.append(Env(parent, decls, namespaces, module))
        return len(self.envs) - 1

    def lookup(self, env: int | None, name: str) -> tuple[str, ...] | None:
        while env is not None:
            if name in self.envs[env].decls:
                return self.envs[env].decls[name]
            env = self.envs[env].parent
        return None

    def resolve(self, env: int | None, name: str) -> tuple[str, ...] | None:
        """The axioms of the constant `name` refers to in `env`'s scope, found as Lean's
        `resolveGlobalName` finds it (src/Lean/ResolveName.lean): `_root_.x` is `x` itself;
        otherwise `ns ++ x` for the open namespaces innermost first (`resolveUsingNamespace`),
        then `x` itself (`resolveExact`). `open` and private names are not modelled (the
        double records a header's `private` declarations under their plain names)."""
        if name.startswith("_root_."):
            return self.lookup(env, name.removeprefix("_root_."))
        namespaces = self.envs[env].namespaces if env is not None else ()
        for k in range(len(namespaces), -1, -1):
            found = self.lookup(env, ".".join(namespaces[:k] + (name,)))
            if found is not None:
                return found
        return None

    def _scan(self, cmd: str, env: int | None) -> tuple[dict, tuple[str, ...], list[dict]]:
        """Declarations a command adds (by full name), the namespaces left open, and the
        "already been declared" errors for names its env already holds (conformance #8: a
        kimina snippet elaborated on a reused env redeclares its prefix)."""
        namespaces = self.envs[env].namespaces if env is not None else ()
        decls, errors = {}, []
        for i, line in enumerate(cmd.split("\n"), start=1):
            words = line.split()
            if words[:1] == ["namespace"] and len(words) > 1:
                namespaces = namespaces + (words[1],)
            elif words[:1] == ["end"] and len(words) > 1 and namespaces and namespaces[-1] == words[1]:
                namespaces = namespaces[:-1]
            m = _DECL.match(line)
            if m:
                full = ".".join(namespaces + (m.group(2),))
                if self.lookup(env, full) is not None or full in decls:
                    col = m.start(2)
                    errors.append(
                        message(
                            "error", f"'{full}' has already been declared", pos(i, col), pos(i, col + len(m.group(2)))
                        )
                    )
                decls[full] = ()
        return decls, namespaces, errors

    def command(self, cmd: str, env: int | None) -> dict:
        if env is not None and not (isinstance(env, int) and 0 <= env < len(self.envs)):
            return dict(UNKNOWN_ENV)
        module = self.envs[env].module if env is not None else _starts_with_module(cmd)
        lines = cmd.rstrip().split("\n")
        at = next((i for i, line in enumerate(lines) if line.startswith("#print axioms")), None)
        if at is not None:
            # A command text holding several commands answers once: one env, the messages of all
            # (positions relative to the whole text), as REPL/Main.lean elaborates a whole `cmd`.
            name = lines[at].split(None, 2)[2].strip()
            if at == 0:
                return self._print_axioms(name, env, module, line=1, new_env=True)
            reply = self.command("\n".join(lines[:at]), env)
            if "env" in reply:
                printed = self._print_axioms(name, reply["env"], module, line=at + 1, new_env=False)
                reply = {**reply, "messages": reply.get("messages", []) + printed["messages"]}
                reply["env"] = reply.pop("env")  # key order as in the transcripts: env last
            return reply
        check = STATEMENT_CHECK.match(lines[-1]) if len(lines) > 1 else None
        if check is not None:
            return self._statement_check(lines, env, check["alias"], check["name"])
        decls, namespaces, errors = self._scan(cmd, env)
        parts = split_declaration(cmd)
        theorem = self.world.theorem(parts[1]) if parts else None
        if theorem is None:  # a header, or declarations the double does not model: elaborated as they are
            reply = {"env": self._new_env(env, decls, namespaces, module)}
            if errors:
                reply["messages"] = errors
            return reply
        return self._declaration(cmd, env, parts, theorem, decls, namespaces, module, errors)

    def _statement_check(self, lines: list[str], env: int | None, alias: str, name: str) -> dict:
        """A text ending in Dojoflow's statement check `theorem ALIAS : PROP := NAME`
        (tasks/lean/verdict.py, rules 2 and 3): the text before it, then the check. A theorem that
        elaborates adds no message (a command without messages answers only its env, as in every
        transcript) and ALIAS depends on NAME's axioms; NAME unknown answers Lean's `Unknown
        identifier` error (transcripts: "Unknown identifier `bysorry`") and, as Lean's error
        recovery does, ALIAS enters the env through `sorryAx`. NAME is resolved in the namespaces
        open there (`resolve`). Not modelled: Lean's comparison of PROP with NAME's type, and the
        namespace ALIAS is declared in (it is kept as written)."""
        reply = self.command("\n".join(lines[:-1]), env)
        if "env" not in reply:
            return reply
        parent = self.envs[reply["env"]]
        axioms = self.resolve(reply["env"], name)
        messages = reply.get("messages", [])
        if axioms is None:
            line, col = len(lines), len(lines[-1]) - len(name)
            messages = messages + [
                message("error", f"Unknown identifier `{name}`", pos(line, col), pos(line, col + len(name)))
            ]
            axioms = ("sorryAx",)
        new_env = self._new_env(reply["env"], {alias: axioms}, parent.namespaces, parent.module)
        return {**({"messages": messages} if messages else {}), "env": new_env}

    def _declaration(self, cmd, env, parts, t: WorldTheorem, decls, namespaces, module, errors) -> dict:
        before, statement, proof = parts
        line = before.count("\n") + (2 if before else 1)
        name = statement.split()[1]
        # The constant is the name as written in the namespaces open where it is declared, as
        # Lean's `mkDeclName` (src/Lean/Elab/DeclUtil.lean) makes it (`_root_.x` is `x`), not
        # the traced full name: a theorem file's statement, sent without its namespace, is `x`.
        declared = name.removeprefix("_root_.") if name.startswith("_root_.") else ".".join((*namespaces, name))
        name_pos, name_end = (
            pos(line, len(statement.split()[0]) + 1),
            pos(line, len(statement.split()[0]) + 1 + len(name)),
        )
        last = len(cmd.rstrip().split("\n"))
        proof = proof.strip()
        if proof == SORRY:
            decls[declared] = ("sorryAx",)
            if t.initial is None:
                err = message("error", f"the Lean process double knows no goals for {t.full_name}", name_pos, name_end)
                return {"messages": errors + [err], "env": self._new_env(env, decls, namespaces, module)}
            # transcripts: upstream/invalid_tactic, tactic_mode_sorry: a sorry with its proofState and goal,
            # and the warning on the declaration's name.
            self.states.append(State(t, t.initial, frozenset()))
            col = len(cmd.rstrip().split("\n")[-1]) - len(SORRY)
            return {
                "sorries": [
                    {
                        "proofState": len(self.states) - 1,
                        "pos": pos(last, col),
                        "goal": t.initial,
                        "endPos": pos(last, col + len(SORRY)),
                    }
                ],
                "messages": errors + [message("warning", SORRY_WARNING, name_pos, name_end)],
                "env": self._new_env(env, decls, namespaces, module),
            }
        out = self.world.run_proof(t, proof)
        if out.special:
            raise ProcessFault(out.special)
        if out.state is None:
            # upstream/have_by_sorry: an unfinished proof is an error message ("unsolved goals" and the
            # state) from `:=` to the end of the proof; the declaration still enters the env (with sorryAx).
            decls[declared] = ("sorryAx",)
            err = message("error", out.error, pos(line, len(statement) + 1), pos(last, 0))
            return {"messages": errors + [err], "env": self._new_env(env, decls, namespaces, module)}
        decls[declared] = tuple(sorted(out.axioms))
        reply: dict = {}
        msgs = list(errors)
        if "sorryAx" in out.axioms:  # every transcript command that uses sorry carries the warning
            msgs.append(message("warning", SORRY_WARNING, name_pos, name_end))
        if msgs:
            reply["messages"] = msgs
        reply["env"] = self._new_env(env, decls, namespaces, module)
        return reply

    def _print_axioms(self, name: str, env: int | None, module: bool, line: int, new_env: bool) -> dict:
        """Print.lean's `elabPrintAxioms`: info "'N' depends on axioms: [a, b]" (sorted by name),
        or "'N' does not depend on any axioms"; refused in a `module` (lean4#8174)."""
        start, end = pos(line, 0), pos(line, len("#print"))
        if new_env:
            new_env = self._new_env(env, {}, self.envs[env].namespaces if env is not None else (), module)
        if module:
            return {"messages": [message("error", MODULE_PRINT_AXIOMS, start, end)], "env": new_env}
        axioms = self.lookup(env, name)
        if axioms is None:
            # Lean's unknown-constant error (src/Lean/Exception.lean, backtick style of the v4.33 transcripts).
            return {
                "messages": [message("error", f"Unknown constant `{name}`", pos(line, 14), pos(line, 14 + len(name)))],
                "env": new_env,
            }
        text = (
            f"'{name}' depends on axioms: [{', '.join(sorted(axioms))}]"
            if axioms
            else f"'{name}' does not depend on any axioms"
        )
        return {"messages": [message("info", text, start, pos(line, len("#print axioms")))], "env": new_env}

    # -- proof states ------------------------------------------------------------------------
    def tactic(self, tactic: str, proof_state) -> dict:
        if not (isinstance(proof_state, int) and 0 <= proof_state < len(self.states)):
            return dict(UNKNOWN_STATE)
        state = self.states[proof_state]
        text = norm(tactic)
        if CRASH in text or HANG in text:
            raise ProcessFault(CRASH if CRASH in text else HANG)
        if text.split(" ")[0] not in self.known_tactics:
            return dict(UNKNOWN_TACTIC)
        if text == SORRY:
            # upstream/tactic_mode_sorry: the sorry gets a proofState of its own, then the new state.
            self.states.append(State(state.theorem, state.goals, state.axioms))
            sorry_id = len(self.states) - 1
            new = self._remember(state.theorem, NO_GOALS, state.axioms | {"sorryAx"})
            return {
                "sorries": [{"proofState": sorry_id, "goal": state.goals}],
                "proofStatus": "Incomplete: contains sorry",
                "proofState": new,
                "goals": [],
            }
        t = state.theorem
        if t is not None and text in (f"exact {t.full_name}", f"exact {t.full_name.rsplit('.', 1)[-1]}"):
            # upstream/self_proof_exact_check: a proof by the theorem itself fails the kernel check.
            return {"proofStatus": KERNEL_FAILURE, "proofState": self._remember(t, NO_GOALS, state.axioms), "goals": []}
        if t is None or norm(state.goals) == NO_GOALS:
            out_state, axioms, error = None, set(), "no goals to be proved"
        else:
            out = self.world.run_tactics(t, state.goals, tactic)
            out_state, axioms, error = out.state, out.axioms, out.error
        if out_state is None and re.search(r"(^|[\s(⟨,])\?[A-Za-z]", text):
            # upstream/app_type_mismatch: `apply ?succ` (a named hole nothing fills) leaves a
            # metavariable and no goals.
            new = self._remember(t, NO_GOALS, state.axioms)
            return {"proofStatus": METAVARIABLES, "proofState": new, "goals": []}
        if out_state is None:
            # upstream/invalid_tactic: the error as a message at 0:0, no goals, and the state the error
            # recovery left ("contains sorry"), with a new proofState.
            new = self._remember(t, NO_GOALS, state.axioms | {"sorryAx"})
            return {
                "proofStatus": "Incomplete: contains sorry",
                "proofState": new,
                "messages": [message("error", error, pos(0, 0), pos(0, 0))],
                "goals": [],
            }
        all_axioms = state.axioms | axioms
        new = self._remember(t, out_state, all_axioms)
        goals = [] if norm(out_state) == NO_GOALS else out_state.split("\n\n")
        # upstream/proof_step: "Completed" with goals [], or "Incomplete: open goals remain" with them.
        status = (
            "Incomplete: contains sorry"
            if "sorryAx" in all_axioms
            else "Incomplete: open goals remain"
            if goals
            else "Completed"
        )
        return {"proofStatus": status, "proofState": new, "goals": goals}

    def _remember(self, theorem, goals: str, axioms) -> int:
        self.states.append(State(theorem, goals, frozenset(axioms)))
        return len(self.states) - 1


def _starts_with_module(cmd: str) -> bool:
    """A `module` header: the first token of the file (Lean's module system, lean4#8174's era)."""
    text = re.sub(r"/-.*?-/", "", cmd, flags=re.S)
    for line in text.splitlines():
        words = line.split("--", 1)[0].split()
        if words:
            return words[0] == "module"
    return False
