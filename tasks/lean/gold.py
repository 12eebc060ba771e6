"""The gold-standard check: leanprover/comparator replays a proof the fast backend accepted in a
fresh kernel before it counts (docs/lean-backends.md, "Verdict levels").

Declared once, in tasks/lean/registry.py (`GoldDef("comparator", ...)`). For one theorem and proof:
- the challenge is the statement as the store holds it, proved by `sorry`, under the theorem's
  own file header (trusted: it comes from the store and the traced checkout); the solution is the
  same header and the declaration rebuilt with the proof (tasks/lean/source.py, as the backends send it);
- both go in a fresh Lake project with comparator's config (`challenge_module`, `solution_module`,
  `theorem_names`, `permitted_axioms` = `backend.allowed_axioms`, `enable_nanoda`), and
  `lake env comparator config.json` runs there; comparator builds and exports each module in its
  sandbox (landrun, or Dojoflow's launcher over bubblewrap: tasks/lean/gold_sandbox.py) and then,
  outside it, compares the statements, checks the axioms and replays the solution in a fresh kernel.

What comparator answers (read in its source, leanprover/comparator 19e111e, Main.lean and
Comparator/*.lean): exit code 0 after printing "Your solution is okay!", else exit code 1 with
`uncaught exception: <message>` on stderr (Lean's runtime prints a `main` that throws so). That
commit has no JSON report (no `json_output_path` in its `Config`), so Dojoflow reads the exit code
and those messages, and keeps its own JSON record of each run (`GoldResult`). `read_outcome` says
which message is a rejection and which an infrastructure failure; an infrastructure failure is
retried once, then an `error` (never a verdict).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from storage.lean_text import LeanTextError, check_name, quote_name, split_name
from storage.lean_text import challenge_problem as storage_challenge_problem

from .backend import TheoremSpec
from .source import proof_command, sorry_command

GOLD_RULE_VERSION = "gold-comparator-2026-11-27.1"
"""The version of how a gold check is built and read; cached gold answers are keyed on it."""

KERNEL_REPLAYED = "kernel_replayed"
ELABORATOR_CHECKED = "elaborator_checked"
OUTPUT_CAP = 20_000  # characters of comparator's output kept (its tail): messages, not a transcript

OK_LINE = "Your solution is okay!"  # Main.lean `compareIt`
# Comparator/Compare.lean and Comparator/Axioms.lean `throw s!"..."`: the proof is not the challenge's.
COMPARISON = (
    "theorem statement do not match",
    "constant kind don't match",
    "Const does not match",
    "Const not found in solution",
    "Solution constant is not a theorem",
    "Solution constant is not a definition",
)
AXIOMS = ("Illegal axiom detected", "Constant not found in solution")
# Main.lean `runBuiltinKernel` / `runExternalKernel`: printed before the kernel's error is thrown.
KERNEL = ("Lean default kernel rejects the solution", "kernel rejected the solution", "Quotient post-check rejects")


@dataclass(frozen=True)
class GoldResult:
    """One comparator run, as Dojoflow records it (JSON in the verification cache)."""

    status: Literal["accepted", "rejected", "error"]
    category: str  # accepted | comparison | axioms | kernel | solution_build | challenge | infrastructure
    reason: str
    checker: str = "comparator"
    kernels: tuple[str, ...] = ()  # the kernels that accepted it: ("lean",), ("nanoda", "lean")
    output: str = ""  # the tail of comparator's stdout and stderr
    sandbox: str = ""  # what contained the builds: landrun | bubblewrap
    seconds: float = 0.0  # wall-clock time of the comparator process (its last run)

    @property
    def kernel_accepted(self) -> bool:
        return self.status == "accepted"


def gold_name(theorem: TheoremSpec) -> str:
    """The constant comparator is asked about: the full name, a private theorem's `_private.M.0.`
    prefix left out (the declaration is rebuilt without `private`, tasks/lean/source.py), each part
    quoted as Lean writes it (comparator's recorded case numeric_namespace names `«123».foo`)."""
    parts = split_name(theorem.full_name)
    if parts[:1] == ["_private"] and "0" in parts:
        parts = parts[parts.index("0") + 1 :]
    return ".".join(f"«{p}»" if p[:1].isdigit() else quote_name(f"«{p}»") for p in parts)


def challenge_problem(statement: str, full_name: str) -> str | None:
    """Why comparator could not be given this theorem as a challenge, or None (the importer's check,
    storage/lean_text.py `challenge_problem`, with the name and the challenge text built)."""
    try:
        check_name(full_name)
        sorry_command(TheoremSpec("", "", "", "", full_name, statement))
    except LeanTextError as e:
        return f"comparator cannot take it as a challenge: {e}"
    why = storage_challenge_problem(statement)
    return f"comparator cannot take it as a challenge: the statement {why}" if why else None


def challenge_text(header: str, theorem: TheoremSpec) -> str:
    return _joined(header, sorry_command(theorem) + "\n")


def solution_text(header: str, theorem: TheoremSpec, proof: str) -> str:
    return _joined(header, proof_command(theorem, proof))


def _joined(header: str, declaration: str) -> str:
    return header + ("" if not header or header.endswith("\n") else "\n") + "\n" + declaration


def package_name(project: Path) -> str | None:
    """The Lake package name a project declares (lakefile.toml `name`, lakefile.lean `package`)."""
    toml, lean = project / "lakefile.toml", project / "lakefile.lean"
    if toml.is_file():
        found = re.search(r'(?m)^\s*name\s*=\s*"([^"]+)"', toml.read_text(encoding="utf-8"))
        return found.group(1) if found else None
    if lean.is_file():
        found = re.search(r"(?m)^\s*package\s+«?([^\s»]+)»?", lean.read_text(encoding="utf-8"))
        return found.group(1) if found else None
    return None


def write_project(
    folder: Path, header: str, theorem: TheoremSpec, proof: str, project: Path | None, config: dict
) -> Path:
    """A fresh Lake project for one comparator run: Challenge.lean, Solution.lean, config.json,
    lakefile.toml (the two libraries, and the theorem's repository as a path dependency whose
    fetched packages are reused), the repository's lean-toolchain. Returns the config's path."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "Challenge.lean").write_text(challenge_text(header, theorem), encoding="utf-8")
    (folder / "Solution.lean").write_text(solution_text(header, theorem, proof), encoding="utf-8")
    lakefile = ['name = "dojoflow_gold"', 'version = "0.1.0"']
    if project is not None:
        lakefile.insert(1, f"packagesDir = {json.dumps(str(project / '.lake' / 'packages'))}")
        name = package_name(project)
        if name is not None:
            lakefile += ["", "[[require]]", f"name = {json.dumps(name)}", f"path = {json.dumps(str(project))}"]
        if (project / "lean-toolchain").is_file():
            shutil.copyfile(project / "lean-toolchain", folder / "lean-toolchain")
    lakefile += ["", "[[lean_lib]]", 'name = "Solution"', "", "[[lean_lib]]", 'name = "Challenge"', ""]
    (folder / "lakefile.toml").write_text("\n".join(lakefile), encoding="utf-8")
    path = folder / "config.json"
    path.write_text(json.dumps(config, indent=2), encoding="utf-8")
    return path


def comparator_config(theorem: TheoremSpec, allowed_axioms, nanoda: bool) -> dict:
    """comparator's config (Main.lean `Config`)."""
    return {
        "challenge_module": "Challenge",
        "solution_module": "Solution",
        "theorem_names": [gold_name(theorem)],
        "permitted_axioms": list(allowed_axioms),
        "enable_nanoda": nanoda,
    }


def read_outcome(returncode: int, stdout: str, stderr: str, sandbox: str = "") -> GoldResult:
    """What one comparator run established (module docstring): accepted only on exit code 0 with
    its success line; a rejection only where its message is one of comparator's own judgements;
    anything else (a crash, a signal, a missing tool, a failed challenge) is not a verdict."""
    output = (stdout + ("\n" if stdout and stderr else "") + stderr)[-OUTPUT_CAP:]
    kernels = tuple(k for k in ("nanoda",) if f"{k} kernel accepts the solution" in stdout)
    if returncode == 0 and OK_LINE in stdout:
        return GoldResult(
            "accepted",
            "accepted",
            "comparator accepts: same statement, permitted axioms, replayed by the kernel",
            kernels=kernels + ("lean",),
            output=output,
            sandbox=sandbox,
        )
    if returncode == 0:
        return GoldResult(
            "error", "infrastructure", "comparator exited 0 without its success line", output=output, sandbox=sandbox
        )
    thrown = _thrown(stderr)
    if returncode == 1 and thrown is not None:
        for category, markers in (("comparison", COMPARISON), ("axioms", AXIOMS)):
            if any(m in thrown for m in markers):
                return GoldResult("rejected", category, thrown, output=output, sandbox=sandbox)
        if any(m in stdout for m in KERNEL):
            return GoldResult(
                "rejected", "kernel", f"the kernel rejects the solution: {thrown}", output=output, sandbox=sandbox
            )
        steps = _steps(stdout)
        if thrown.startswith("Child exited with") and "Building Solution" in steps:
            # after comparator announced the solution's build, the output is the solution's too:
            # a failure there is the solution's (it cannot pass for the challenge's, nor for an error)
            return GoldResult(
                "rejected",
                "solution_build",
                f"the solution does not build or export in a fresh `lake build` ({thrown})",
                output=output,
                sandbox=sandbox,
            )
        if thrown.startswith("Child exited with") and "Building Challenge" in steps:
            return GoldResult(
                "error",
                "challenge",
                f"the challenge (the stored statement with `sorry`) does not "
                f"build ({thrown}): bad input, or the toolchain or sandbox failed",
                output=output,
                sandbox=sandbox,
            )
        return GoldResult("error", "infrastructure", f"comparator failed: {thrown}", output=output, sandbox=sandbox)
    why = f"killed by signal {-returncode}" if returncode < 0 else f"exit code {returncode}"
    return GoldResult("error", "infrastructure", f"comparator crashed ({why})", output=output, sandbox=sandbox)


def _thrown(stderr: str) -> str | None:
    """The message of the exception comparator's `main` threw (`uncaught exception: ...`)."""
    found = stderr.rfind("uncaught exception:")
    return stderr[found + len("uncaught exception:") :].strip() if found >= 0 else None


def _steps(stdout: str) -> set[str]:
    """The steps comparator announced (`Building X`, `Exporting ... from X`, ...)."""
    return {line.strip() for line in stdout.splitlines() if line.startswith(("Building ", "Exporting "))}


def run_comparator(argv: list[str], cwd: Path, env: dict[str, str], timeout_s: float, sandbox: str) -> GoldResult:
    """Run comparator once (its own process group, killed whole on timeout) and read its outcome.
    Its output goes to files in `cwd`, never into memory whole: the solution's build prints there
    too (comparator's builds inherit its stdout), and a short proof can print without limit; only
    the head and the tail are read (`_capped`)."""
    out_path, err_path = cwd / "comparator.stdout", cwd / "comparator.stderr"
    started = time.perf_counter()
    with out_path.open("wb") as out, err_path.open("wb") as err:
        try:
            proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=out, stderr=err, start_new_session=True)
        except OSError as e:
            return GoldResult("error", "infrastructure", f"comparator could not start: {e}", sandbox=sandbox)
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            return GoldResult(
                "error",
                "infrastructure",
                f"comparator timed out after {timeout_s:g} s",
                output=_capped(err_path)[-OUTPUT_CAP:],
                sandbox=sandbox,
            )
    result = read_outcome(proc.returncode, _capped(out_path), _capped(err_path), sandbox)
    return dataclasses.replace(result, seconds=time.perf_counter() - started)


def _capped(path: Path, head: int = 64 * 1024, tail: int = 4 * OUTPUT_CAP) -> str:
    """The first `head` and last `tail` bytes of a file, as text (comparator's own step lines come
    first, its exception last)."""
    size = path.stat().st_size
    with path.open("rb") as f:
        if size <= head + tail:
            return f.read().decode("utf-8", "replace")
        first = f.read(head)
        f.seek(size - tail)
        return (first + b"\n[...]\n" + f.read()).decode("utf-8", "replace")


def gold_check(runner, theorem: TheoremSpec, proof: str, header: str, project: Path | None) -> GoldResult:
    """One gold check with its infrastructure retry: a run that established nothing (an `error`)
    is run once more in a fresh project; a second failure is the `error` returned."""
    result = None
    for _ in range(2):
        folder = Path(tempfile.mkdtemp(prefix="gold-", dir=runner.work_root))
        try:
            config = write_project(folder, header, theorem, proof, project, runner.config(theorem))
            result = runner.run(folder, config)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        if result.status != "error":
            return result
    return result
