"""The one double of the Lean process, shared by every backend's tests: only Lean is fake;
LeanInteract, the kimina server and lean-dojo's `Dojo` run unmodified above it.

Layers (each importable on its own; none imports anything but the standard library and the
sample's description, so the executable runs in the sandbox's minimal environment):

- `world.LeanWorld(storage/sample)`: what Lean would know about the sample: each theorem by its
  statement, its traced transitions and the known proofs' steps and axioms
  (`world.theorem(statement)`, `world.by_name[full_name]`, `world.run_tactics(t, state, text)`,
  `world.run_proof(t, proof)`; a block of several tactics is split into known steps).
- `core.LeanCore(world)`: one REPL process's memory; `core.answer(request_dict) -> reply_dict`
  answers `{"cmd", "env"?}` and `{"tactic", "proofState"}` in the shapes of the REPL's recorded
  transcripts (/work/shared/lean-transcripts/; each shape cites its file): proof steps with
  error `messages` and "Incomplete: contains sorry", metavariable and kernel-failure statuses,
  `sorries`, "Unknown environment." / "Unknown proof state.", "declaration uses `sorry`",
  `#print axioms` in Print.lean's format (refused after a `module` header), "already been
  declared" for a name its env holds. The tactics `double_crash` / `double_hang` raise
  `core.ProcessFault` (a snippet that kills or hangs its process); frontends decide how.
  `core.states[i]` / `core.envs[i]` are the proof states and environments by REPL id.
- `faults`: test-controlled faults read from a JSON control file before each request
  (`fault_for(control, raw) -> Fault | None`: crash, hang, late, garbage, grow_memory;
  `write_rules(control, rules)`), and the helpers to apply them (`grow_memory`, `sleep_forever`).
- `repl_main`: the REPL executable (blank-line separated JSON on stdin/stdout; `serve(core,
  stdin, stdout, log, control)` for other frontends to reuse).
- `launch.make_repl_double(folder) -> ReplDouble`: the executable behind a fake `lake env`, as
  LeanInteract launches it; `.options()` for `backend.repl`, `.repl_binary` for a kimina
  workspace, `.faults(rule, ...)`, `.requests()`, `.received()`, `.pids()`.

See docs/lean-backends.md, "Testing with the Lean process double".
"""

from .core import LeanCore, ProcessFault
from .faults import Fault, fault_for, write_rules
from .launch import ReplDouble, make_repl_double
from .world import LeanWorld

__all__ = [
    "Fault",
    "LeanCore",
    "LeanWorld",
    "ProcessFault",
    "ReplDouble",
    "fault_for",
    "make_repl_double",
    "write_rules",
]
