"""Lean text sent to a backend for one theorem: the file header it lives under, the
`by sorry` command that opens it, and the whole-proof command. Only the proof part
comes from a model, and it has passed `guard.forbidden_construct` before it gets here.
"""

from __future__ import annotations

from pathlib import Path

from storage.errors import InputError
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

    from tasks.tracing.toolchain import minimal_env

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
    lines = text.splitlines(keepends=True)
    return "".join(lines[: theorem.start[0] - 1])


def sorry_command(theorem: TheoremSpec) -> str:
    """The declaration with its proof replaced by `sorry`: Lean answers with its initial goals."""
    return f"{theorem.statement} := by sorry"


def proof_command(theorem: TheoremSpec, proof: str) -> str:
    """The declaration with `proof` as its tactic block, each line indented under `by`."""
    body = "\n".join("  " + line if line.strip() else "" for line in proof.strip("\n").splitlines())
    return f"{theorem.statement} := by\n{body}\n"


def without_module_header(header: str) -> str:
    """The file header with its `module` line left out: where Lean refuses `#print axioms` in a
    `module` (lean4#8174), its message says to do so to read a proof's axioms."""
    lines = header.splitlines(keepends=True)
    return "".join(line for line in lines if line.split("--", 1)[0].strip() != "module")


def print_axioms_command(theorem: TheoremSpec) -> str:
    return f"#print axioms {theorem.full_name}"


def split_imports(header: str) -> tuple[list[str], str, bool]:
    """(the header's `import` lines, the rest of it, whether it opens with `module` or
    `prelude`). Lean reads a file's imports before any command, with only comments and
    blank lines around them; servers that run the imports once and the rest per proof (the
    kimina server's `split_snippet` takes only the leading `import` lines) need them first.
    A `module` / `prelude` header must stay where it is, so the caller is told."""
    imports: list[str] = []
    rest: list[str] = []
    lines = header.splitlines(keepends=True)
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
