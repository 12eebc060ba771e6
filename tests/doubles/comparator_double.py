"""A double of leanprover/comparator's process (the `comparator` executable), for tests: it stands
on PATH (or at backend.gold.comparator_path) where no Lean toolchain exists.

It reads what real comparator reads (config.json given as its argument, the challenge and solution
modules in its working folder) and answers as comparator's own recorded test outcomes show
(leanprover/comparator 19e111e, tests/projects/*/config.json and test.json: the exit code of each
case) and with the lines its source prints (Main.lean): exit 0 after "Your solution is okay!", else
`uncaught exception: <message>` on stderr and exit 1 (Lean's runtime for a `main` that throws).
The build and export steps really run through $COMPARATOR_LANDRUN as Main.lean `buildLandrunArgs`
builds them, so Dojoflow's sandbox launcher is exercised; what they run stands in for
`lake build` (the module must be readable, `.lake` writable) and `lean4export` (its double).

What it cannot do is elaborate or replay: it rejects where a recorded case shows comparator
rejecting an input of that kind (each decision below cites its case) and otherwise accepts, as in
simple_match; so it says nothing about whether a proof is valid Lean. Control: `control.json` beside the
executable (`{"crash": N}`: the next N runs die by SIGSEGV); every run is logged to `runs.log`.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path


def make_comparator_double(folder: Path) -> Path:
    """Write `comparator`, `lean4export`, `lake` (only `lake env CMD`) and `nanoda_bin` doubles
    into `folder`; returns it (put it first on PATH, or point backend.gold at it)."""
    folder.mkdir(parents=True, exist_ok=True)
    # -I -S: no user or site packages, no `site` at all: the double imports only the standard library
    run = f"exec {shlex.quote(sys.executable)} -I -S {shlex.quote(str(Path(__file__).resolve()))} --dir {shlex.quote(str(folder))}"
    scripts = {
        "comparator": f'#!/bin/sh\n{run} "$@"\n',
        # lean4export prints the export of the named declarations (ndjson); the double, one line.
        "lean4export": '#!/bin/sh\necho \'{"export": "double", "module": "\'"$1"\'"}\'\n',
        # Lake's `env` command runs a program in the workspace's environment (Lake CLI help, `lake env`).
        "lake": '#!/bin/sh\nif [ "$1" = "env" ]; then shift; exec "$@"; fi\necho "lake double: only env" >&2; exit 1\n',
        "nanoda_bin": "#!/bin/sh\nexit 0\n",
    }
    for name, text in scripts.items():
        path = folder / name
        path.write_text(text)
        path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return folder


def runs(folder: Path) -> int:
    log = folder / "runs.log"
    return len(log.read_text().splitlines()) if log.exists() else 0


class Thrown(Exception):
    pass


def declarations(text: str) -> dict[str, tuple[str, str, str]]:
    """{declared name: (kind, signature, body)} of a module's top-level declarations."""
    found = {}
    pattern = r"(?m)^(?:private\s+|noncomputable\s+|protected\s+)*(theorem|lemma|axiom|def|opaque|abbrev|structure|inductive|elab)\s+(\S+)"
    matches = list(re.finditer(pattern, text))
    for i, m in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
        decl = text[m.end() : end]
        signature, _, body = decl.partition(":=")
        kind = "theorem" if m.group(1) == "lemma" else m.group(1)
        found[m.group(2)] = (kind, " ".join(signature.split()), body)
    return found


def find(decls: dict, target: str):
    """The declaration of `target`: its declared name's parts end the target's (namespaces)."""
    parts = target.split(".")
    for name, decl in decls.items():
        own = name.split(".")
        if parts[-len(own) :] == own:
            return decl
    return None


def sandboxed(cwd: Path, cmd: list[str], writable: bool) -> int:
    """One step through $COMPARATOR_LANDRUN, with the arguments of Main.lean `buildLandrunArgs`."""
    landrun = os.environ.get("COMPARATOR_LANDRUN", "landrun")
    args = ["--best-effort", "--ro", "/", "--rw", "/dev", "-ldd", "-add-exec"]
    for name in ("PATH", "HOME", "LEAN_PATH", "LEAN_ABORT_ON_PANIC"):
        args += ["--env", name]
    args += ["--ro", str(cwd)] + (["--rwx", str(cwd / ".lake")] if writable else [])
    env = {**os.environ, "LEAN_ABORT_ON_PANIC": "1"}
    try:
        return subprocess.run([landrun, *args, "--", *cmd], cwd=cwd, env=env).returncode
    except OSError as e:  # IO.Process.spawn fails: comparator's main throws
        raise Thrown(f"could not execute external process '{landrun}': {e}") from None


def module_path(module: str) -> str:
    """`Challenge.«12.34».«5»` -> `Challenge/12.34/5.lean` (numeric_namespace)."""
    parts = re.findall(r"«([^»]*)»|([^.«»]+)", module)
    return "/".join(a or b for a, b in parts) + ".lean"


def build_and_export(cwd: Path, module: str, targets: list[str], fails: str | None = None) -> None:
    print(f"Building {module}", flush=True)
    if fails is not None:
        print(f"error: {fails}", file=sys.stderr)
        raise Thrown("Child exited with 1")
    (cwd / ".lake").mkdir(exist_ok=True)
    path = module_path(module)
    # Stands in for `lake build`: the module readable, its build written under .lake.
    build = ["sh", "-c", f"test -r {shlex.quote(path)} && mkdir -p .lake/build && : > .lake/build/{module}.olean"]
    code = sandboxed(cwd, build, writable=True)
    if code != 0:
        raise Thrown(f"Child exited with {code}")  # Main.lean runSandBoxed
    print(f"Exporting #[{', '.join(targets)}] from {module}", flush=True)
    code = sandboxed(cwd, [os.environ.get("COMPARATOR_LEAN4EXPORT", "lean4export"), module, "--", *targets], False)
    if code != 0:
        raise Thrown(f"Child exited with {code}")


def judge(cwd: Path, config: dict) -> None:
    challenge_text = (cwd / module_path(config["challenge_module"])).read_text()
    solution_text = (cwd / module_path(config["solution_module"])).read_text()
    # definition holes are compared and axiom-checked as the theorems are (def_hole*, README "Definition Holes")
    targets = config["theorem_names"] + config.get("definition_names", [])
    permitted = set(config["permitted_axioms"])
    build_and_export(cwd, config["challenge_module"], targets)
    challenge, solution = declarations(challenge_text), declarations(solution_text)
    for target in targets:  # the challenge is trusted: a target it lacks aborts its export
        if find(challenge, target) is None:
            raise Thrown(f"Const not found in challenge '{target}'")  # Compare.lean:46
    build_solution(cwd, config, solution_text, solution)
    for target in targets:
        c_kind, c_sig, _ = find(challenge, target)
        found = find(solution, target)
        if found is None:
            raise Thrown(f"Const not found in solution: '{target}'")  # Compare.lean:76
        s_kind, s_sig, body = found
        if s_kind != c_kind:  # simple_mismatch: `axiom comm` for `theorem comm`, exit_code 1
            raise Thrown(f"Challenge and solution constant kind don't match: '{target}'")  # Compare.lean:82
        if s_sig != c_sig:  # simple_mismatch: another statement under the same name, exit_code 1
            raise Thrown(f"Challenge and solution theorem statement do not match: '{target}'")  # Compare.lean:85
    for name, (kind, sig, _) in challenge.items():  # proj_trick: a changed declaration the statement uses
        other = solution.get(name)
        if name not in targets and other is not None and other[:2] != (kind, sig):
            raise Thrown(f"Const does not match between challenge and target '{name}'")  # Compare.lean:55
    check_axioms(solution, challenge, targets, permitted)
    replay(config, solution_text)


def build_solution(cwd: Path, config: dict, text: str, solution: dict) -> None:
    fails = None
    for target in config["theorem_names"]:
        found = find(solution, target)
        if found and re.search(r"\bdecide\b", found[2]) and ("(" in found[1].split(":")[0] or "∀" in found[1]):
            # `decide` needs a Decidable instance of the statement (Lean src/Lean/Elab/Tactic/ElabTerm.lean,
            # evalDecide: "failed to synthesize Decidable"); a ∀ over Nat or Prop has none, so a fresh
            # `lake build` (no cached auxiliary lemma, adversarial-classes.md rows 2-3) fails.
            fails = "failed to synthesize Decidable"
    build_and_export(cwd, config["solution_module"], config["theorem_names"], fails)


def uses(text: str, name: str) -> bool:
    return re.search(rf"(?<![\w.]){re.escape(name)}(?![\w'])", text) is not None


def check_axioms(solution: dict, challenge: dict, targets: list[str], permitted: set[str]) -> None:
    """Axioms.lean `checkAxioms`: the targets' transitive axioms must be permitted."""
    for target in targets:
        body = find(solution, target)[2]
        if re.search(r"\b(sorry|admit|sorryAx)\b", body) and "sorryAx" not in permitted:
            # def_hole_axiom_issue: sorryAx is an axiom outside permitted_axioms, exit_code 1
            raise Thrown("Illegal axiom detected: 'sorryAx'")  # Axioms.lean:45
        if re.search(r"\bnative_decide\b", body) and "Lean.ofReduceBool" not in permitted:
            raise Thrown("Illegal axiom detected: 'Lean.ofReduceBool'")
        seen, todo = set(), [body]
        while todo:  # transitively: opaque_value reaches the axiom through an opaque's value
            text = todo.pop()
            for name, (kind, sig, value) in solution.items():
                if name in seen or not uses(text, name):
                    continue
                seen.add(name)
                if kind == "axiom" and name not in permitted:
                    # simple_axiom_issue (`exact helper`), opaque_value (`v := f`): exit_code 1
                    raise Thrown(f"Illegal axiom detected: '{name}'")  # Axioms.lean:45
                todo.append(sig + value)


def replay(config: dict, solution_text: str) -> None:
    """Main.lean verifyMatch: external kernels first, then the builtin one."""
    failure = None
    if config.get("enable_nanoda") or config.get("external_kernels"):  # simple_nanoda*: exit_code 0
        print("Running nanoda kernel on solution", flush=True)
        nanoda = os.environ.get("COMPARATOR_NANODA", "nanoda_bin")
        try:
            code = subprocess.run([nanoda], capture_output=True).returncode
        except OSError as e:
            print("Error while interacting with nanoda kernel", flush=True)
            failure = f"Error while interacting with nanoda kernel: {e}"
        else:
            if code != 0:
                print("nanoda kernel rejected the solution", flush=True)
                failure = f"nanoda exited with {code}"
            else:
                print("nanoda kernel accepts the solution", flush=True)
    print("Running Lean default kernel on solution.", flush=True)
    if re.search(r"\b(run_elab|run_cmd|run_meta|addDecl|skipKernelTC)\b", solution_text) or re.match(
        r"\s*prelude\b", solution_text
    ):
        # olean_issue (a declaration added by `addDecl` without the kernel), primitive_issue and
        # char_ofnat_issue (prelude redefinitions): exit_code 1, the kernel's replay rejects them.
        print("Lean default kernel rejects the solution", flush=True)
        failure = failure or "(kernel) declaration type mismatch (the double's stand-in for the kernel's error)"
    else:
        print("Lean default kernel accepts the solution", flush=True)
    if failure:
        raise Thrown(failure)


def main(argv: list[str]) -> int:
    """`comparator_double.py --dir FOLDER CONFIG`: FOLDER holds control.json and runs.log."""
    folder = Path(argv[1])
    with (folder / "runs.log").open("a") as log:
        log.write(json.dumps({"cwd": str(Path.cwd()), "argv": argv[2:]}) + "\n")
    control = folder / "control.json"
    rules = json.loads(control.read_text()) if control.exists() else {}
    if rules.get("crash", 0) > 0:  # an infrastructure failure: the process dies, no verdict
        control.write_text(json.dumps({**rules, "crash": rules["crash"] - 1}))
        os.kill(os.getpid(), signal.SIGSEGV)
    started = time.perf_counter()
    code = run(argv[2:], Path.cwd())
    with (folder / "seconds.log").open("a") as log:  # the double's own time, for benchmarks
        log.write(f"{time.perf_counter() - started:.6f}\n")
    return code


def run(argv: list[str], cwd: Path) -> int:
    if not argv:
        print("uncaught exception: Expected config file path as first argument.", file=sys.stderr)
        return 1
    config = json.loads((cwd / argv[0]).read_text())
    try:
        judge(cwd, config)
    except Thrown as e:
        print(f"uncaught exception: {e}", file=sys.stderr)
        return 1
    print("Your solution is okay!", flush=True)  # simple_match: exit_code 0
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
