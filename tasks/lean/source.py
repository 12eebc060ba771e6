"""Lean text sent to a backend for one theorem: the file header it lives under, the
`by sorry` command that opens it, the whole-proof command, the statement check and
`#print axioms`. Nothing from data reaches Lean as a command: each command is built from
validated parts (storage/lean_text.py: `parse_statement` splits the statement into name,
binders and type and refuses a second command; `quote_name` writes names as Lean quotes
them), and these functions raise `LeanTextError` for data that fails. Only the proof part
comes from a model, and it has passed `guard.forbidden_construct` before it gets here.
"""

from __future__ import annotations

import uuid
from pathlib import Path

from storage.errors import InputError
from storage.lean_text import canonical_proof, parse_statement, quote_name
from storage.sample import SAMPLE_REPOS, SAMPLE_ROOT

from .backend import TheoremSpec

SAMPLE_URL_PREFIX = "https://dojoflow.invalid/samples/"


def repo_name(theorem: TheoremSpec) -> str:
    return theorem.url.rstrip("/").removesuffix(".git").rsplit("/", 1)[-1]


def project_dir(theorem: TheoremSpec, projects: dict[str, str], option: str) -> Path:
    """The local checkout of the theorem's repository: from `projects` (by repo_id, then by
    repository name), else the sample's own sources for a sample repository."""
    for key in (theorem.repo_id, repo_name(theorem)):
        if key in projects:
            return Path(projects[key]).expanduser().resolve()
    name = repo_name(theorem)
    if theorem.url.startswith(SAMPLE_URL_PREFIX) and name in SAMPLE_REPOS:
        return SAMPLE_ROOT / "lean" / name
    raise InputError(
        option,
        f"no local checkout is configured for repository {theorem.repo_id} ({theorem.url})",
        f"add `{option}: {{{name}: /path/to/its/checkout}}` (a Lake project at commit {theorem.commit[:12]})",
    )


def check_checkout(theorem: TheoremSpec, directory: Path, option: str) -> None:
    """InputError if `directory` is a git checkout of another commit than the one the store
    traced (Lean would answer about other sources). The sample's sources are exempt: their
    traced commit is a hash of the sources, not a git commit."""
    import subprocess

    from .environment import minimal_env

    if theorem.url.startswith(SAMPLE_URL_PREFIX) or not (directory / ".git").exists():
        return
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=directory, capture_output=True, text=True, env=minimal_env(), timeout=60
        ).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return
    if head and head != theorem.commit:
        raise InputError(
            f"{option}[{repo_name(theorem)}]",
            f"{directory} is at commit {head[:12]}, and the store traced {theorem.repo_id} at {theorem.commit[:12]}",
            f"run `git -C {directory} checkout {theorem.commit}` (or point the option at such a checkout)",
        )


def file_header(theorem: TheoremSpec, project: Path) -> str:
    """The theorem's file up to the line where the theorem starts: its imports, namespaces,
    `open`s and everything declared before it, which is what Lean elaborated it in."""
    path = project / theorem.file_path
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise InputError(
            str(path), f"cannot read the theorem's file ({e})", "check that the checkout holds the traced commit"
        ) from e
    if theorem.start is None:
        raise InputError(
            theorem.full_name,
            "the store does not say where the theorem starts",
            "import a LeanDojo export that has theorem positions",
        )
    lines = lean_lines(text)
    return "".join(lines[: theorem.start[0] - 1])


def lean_lines(text: str) -> list[str]:
    """`text`'s lines, each with its LF, as Lean numbers them (`FileMap.ofString` breaks at LF only,
    src/Lean/Data/Position.lean): `str.splitlines` also breaks at CR, U+2028 and others, and would
    cut a file at another line than the one LeanDojo's `start` names."""
    lines = text.split("\n")
    return [line + "\n" for line in lines[:-1]] + ([lines[-1]] if lines[-1] else [])


def sorry_command(theorem: TheoremSpec) -> str:
    """The declaration with its proof replaced by `sorry`: Lean answers with its initial goals."""
    return f"{parse_statement(theorem.statement).declaration()} := by sorry"


def proof_command(theorem: TheoremSpec, proof: str) -> str:
    """The declaration with `proof` as its tactic block, each line indented under `by`.

    Built from the proof's canonical text (`canonical_proof`: LeanTextError for any other), split
    at LF only, as Lean splits lines: the lines the guard read are the lines Lean gets, each
    two spaces further in (a line of spaces only is sent empty)."""
    body = "\n".join(proof_lines(proof))
    return f"{parse_statement(theorem.statement).declaration()} := by\n{body}\n"


def proof_lines(proof: str) -> list[str]:
    """The proof's lines as sent under `by`: canonical text, split at LF, indented two spaces."""
    text = canonical_proof(proof).strip("\n")
    return ["  " + line if line.strip(" \t") else "" for line in text.split("\n")]


def without_module_header(header: str) -> str:
    """The file header with its `module` line left out: where Lean refuses `#print axioms` in a
    `module` (lean4#8174), its message says to do so to read a proof's axioms."""
    lines = lean_lines(header)
    return "".join(line for line in lines if line.split("--", 1)[0].strip() != "module")


CHECK_PREFIX = "_dojoflow_check_"


def check_alias() -> str:
    """A fresh name for one check's statement check: a random suffix, so no proof can print a
    message about it before it exists (a forged `#print axioms` answer names the wrong constant)."""
    return f"{CHECK_PREFIX}{uuid.uuid4().hex}"


def statement_check_command(theorem: TheoremSpec, alias: str) -> str:
    """`theorem ALIAS : ∀ BINDERS, TYPE := NAME`: Lean elaborates the original statement and
    checks that the constant proves it (verdict rule 2, as SafeVerify compares the types);
    `#print axioms ALIAS` then lists NAME's axioms (rule 3) under a name no proof can forge.

    NAME is the constant `proof_command` declares, written as the statement writes it: the
    check follows the proof command in the same scope (the header's namespaces and `open`s), and
    Lean resolves a name in the innermost namespace first (src/Lean/ResolveName.lean
    `resolveGlobalName`), which is where the proof command put it. Never `full_name`: the
    verdict must be about the constant the proof declared (a `full_name` naming another one is
    refused, `verdict.bad_theorem`), and a private theorem's `_private.M.0.x` is no name the
    proof command, which declares it without `private`, creates."""
    statement = parse_statement(theorem.statement)
    keyword = "theorem" if statement.keyword in ("theorem", "lemma") else "noncomputable def"
    return f"{keyword} {alias} : {statement.proposition()} := {quote_name(statement.name)}"


def split_imports(header: str) -> tuple[list[str], str, bool]:
    """(the header's `import` lines, the rest of it, whether it opens with `module` or
    `prelude`). Lean reads a file's imports before any command, with only comments and
    blank lines around them; servers that run the imports once and the rest per proof (the
    kimina server's `split_snippet` takes only the leading `import` lines) need them first.
    A `module` / `prelude` header must stay where it is, so the caller is told."""
    imports: list[str] = []
    rest: list[str] = []
    lines = lean_lines(header)
    depth = 0  # nesting of /- ... -/ block comments
    for i, line in enumerate(lines):
        text = line.strip()
        if depth == 0 and text.startswith("import "):
            imports.append(text)
            continue
        if depth == 0 and text and not text.startswith(("--", "/-")):
            if text.split()[0] in ("module", "prelude"):
                return [], header, True
            rest.extend(lines[i:])
            break
        depth = max(0, depth + text.count("/-") - text.count("-/"))
        rest.append(line)
    return imports, "".join(rest), False
