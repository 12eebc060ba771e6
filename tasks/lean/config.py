"""Which Lean backend to use, and its limits: the `backend:` section of a proving or
GRPO config (YAML or the Prefect form). See docs/lean-backends.md.

    python -c "from tasks.lean.config import BackendSettings; print(BackendSettings(kind='replay'))"
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .guard import DEFAULT_ALLOWED_AXIOMS

# `import Mathlib` maps more than 9 GB of address space (kimina-lean-server#68), and
# LeanInteract's AutoLeanServer restarts a REPL whose resident memory reaches 0.8 x its
# `memory_hard_limit_mb`: 16 GiB leaves room for both (docs/lean-backends.md, "Memory").
MEMORY_LIMIT_MB = 16384


class ReplOptions(BaseModel):
    """The Lean REPL through LeanInteract, run in each traced repository's checkout."""

    model_config = ConfigDict(extra="forbid")

    projects: dict[str, str] = Field(
        default_factory=dict,
        description="{repo_id or repository name: local checkout (a Lake project at the traced commit)}. The "
        "sample's repositories default to their sources under storage/sample/lean/.",
    )
    lake_path: str = Field("lake", description="The `lake` executable (a name looked up on PATH, or a path).")
    repl_path: str | None = Field(
        None,
        description="A local checkout of leanprover-community/repl (LeanInteract's `local_repl_path`); "
        "default: LeanInteract clones and builds the REPL for the project's Lean version.",
    )
    build_repl: bool = Field(True, description="Let LeanInteract run `lake build` in the REPL checkout.")
    repl_rev: str | None = Field(
        None, description="REPL revision to use (LeanInteract's `repl_rev`); default: LeanInteract's."
    )
    build_project: bool = Field(
        True, description="Let LeanInteract run `lake exe cache get` and `lake build` in each project first."
    )
    cache_dir: str | None = Field(None, description="LeanInteract's cache folder (REPL builds); default: its own.")


class KiminaOptions(BaseModel):
    """A kimina-lean-server checking whole proofs over HTTP."""

    model_config = ConfigDict(extra="forbid")

    url: str = Field("http://localhost:8000", description="Base URL of the server (it answers /health and /api/check).")
    api_key_env: str = Field(
        "LEAN_SERVER_API_KEY",
        description="Environment variable holding the API key, sent as a Bearer token "
        "(the key itself is never written in a config or a log).",
    )
    header: str = Field(
        "",
        description="Lean text put before every snippet: the imports and `open`s the theorems need, "
        "e.g. 'import Mathlib'. Default: the theorem's file up to the theorem, when its checkout is known.",
    )
    projects: dict[str, str] = Field(
        default_factory=dict,
        description="{repo_id or repository name: local checkout}, to read each "
        "theorem's file header from (as for `repl`).",
    )
    batch_size: int = Field(8, ge=1, le=1024, description="Snippets per /api/check request.")
    max_retries: int = Field(
        3, ge=0, le=20, description="Retries of a request answered 429 (no free REPL), 5xx, or not at all."
    )
    retry_backoff_s: float = Field(1.0, ge=0, description="First wait before a retry; doubled at each retry.")
    http_timeout_s: float = Field(600.0, gt=0, description="Time limit of one HTTP request.")


class LeanDojoOptions(BaseModel):
    """lean-dojo's `Dojo` on a traced repository."""

    model_config = ConfigDict(extra="forbid")

    additional_imports: list[str] = Field(
        default_factory=list, description="Extra imports for Dojo's file (its `additional_imports`)."
    )
    build_deps: bool = Field(False, description="Dojo's `build_deps`: rebuild the dependencies too.")
    start_timeout_s: float = Field(
        1800.0,
        gt=0,
        description="Wall-clock limit of starting one theorem's Dojo: Lean elaborates the imports and the "
        "file up to the theorem (minutes with Mathlib). lean-dojo's own `timeout` bounds both this start and "
        "every tactic; Dojoflow gives the start this limit and each tactic `tactic_timeout_s`.",
    )
    cache_dir: str | None = Field(
        None,
        description="lean-dojo's cache (its CACHE_DIR), where tracing left the traced and built repository "
        "(`<dojoflow home>/traces/work/lean_dojo_cache` for `dojoflow trace`); default: $CACHE_DIR, else lean-dojo's "
        "own (~/.cache/lean_dojo). The Dojo never traces: a repository missing there is an error.",
    )
    extra_pythonpath: list[str] = Field(
        default_factory=list,
        description="Folders to put on the Dojo worker's PYTHONPATH, where lean-dojo is "
        "installed if it is not in Dojoflow's environment.",
    )


class SandboxSettings(BaseModel):
    """How every Lean process is contained (bubblewrap); tasks/lean/sandbox.py builds the
    `bwrap` command from these. See docs/lean-backends.md ("Sandbox")."""

    model_config = ConfigDict(extra="forbid")

    unsafe_no_sandbox: bool = Field(
        False,
        description="UNSAFE: run Lean processes without bubblewrap, where it cannot run (macOS, no user "
        "namespaces). Proofs and tactics from a model then run as you, with your files and network.",
    )
    bwrap_path: str = Field("bwrap", description="The bubblewrap executable (Debian package `bubblewrap`).")
    cpu_limit_s: int | None = Field(
        3600,
        ge=1,
        description="CPU seconds each Lean process may use over its life (RLIMIT_CPU); a REPL that reaches it "
        "is killed and replaced like a crashed one. null: none.",
    )
    max_processes: int | None = Field(
        1024,
        ge=16,
        description="Processes and threads the whole sandboxed tree of one Lean process may hold (a pids cgroup; "
        "RLIMIT_NPROC where no cgroup can be made and Dojoflow does not run as root); a fork bomb then ends "
        "as an error verdict. null: none.",
    )
    max_answer_mb: float | None = Field(
        64.0,
        gt=0,
        description="The largest answer a Lean process may write for one command, MiB; a longer one is not read: "
        "the process is stopped and the check is an error naming the reason. null: no cap.",
    )
    read_only_paths: list[str] = Field(
        default_factory=list,
        description="More paths a Lean process may read (besides the system folders, the toolchain and the project).",
    )
    writable_paths: list[str] = Field(
        default_factory=list,
        description="More folders a Lean process may write (besides its own private folder). Default: none.",
    )


class GoldSettings(BaseModel):
    """The gold-standard check (tasks/lean/gold.py): leanprover/comparator replays, in a fresh
    kernel, every proof the fast backend accepted, before it counts. See docs/lean-backends.md
    ("Verdict levels")."""

    model_config = ConfigDict(extra="forbid")

    check: Literal["auto", "on", "off"] = Field(
        "auto",
        description="auto: replay every accepted proof with comparator where comparator, lean4export and a sandbox "
        "for it are installed (proofs are then `kernel_replayed`), else go on and name every proof "
        "`elaborator_checked`; on: refuse to run without them; off: never (every proof `elaborator_checked`).",
    )
    comparator_path: str = Field("comparator", description="The comparator executable (leanprover/comparator).")
    lean4export_path: str = Field("lean4export", description="The lean4export executable comparator runs.")
    landrun_path: str = Field(
        "landrun",
        description="The landrun executable comparator sandboxes its builds with; where it cannot run, Dojoflow "
        "gives comparator a landrun-compatible launcher over bubblewrap (tasks/lean/gold_sandbox.py).",
    )
    sandbox: Literal["auto", "landrun", "bubblewrap"] = Field(
        "auto",
        description="What contains comparator's `lake build` and `lean4export`: auto picks landrun where it runs "
        "(Landlock), else bubblewrap through Dojoflow's launcher.",
    )
    nanoda: bool = Field(
        False, description="Also replay with the nanoda kernel (comparator's `enable_nanoda`; `nanoda_bin` on PATH)."
    )
    timeout_s: float = Field(
        1800.0, gt=0, description="Wall-clock limit of one comparator run (two `lake build`s, two exports, a replay)."
    )
    project: str | None = Field(
        None,
        description="A Lake project whose packages a theorem without a repository (a GRPO theorem file) is "
        "replayed against, e.g. the kimina server's workspace; null: such theorems import nothing but Lean.",
    )


class BackendSettings(BaseModel):
    """The backend, its options and its limits."""

    model_config = ConfigDict(extra="forbid")

    kind: str = Field(
        "replay",
        description="A backend of tasks/lean/registry.py: `repl` (Lean REPL via LeanInteract; the default for "
        "real work), `kimina` (kimina-lean-server, whole proofs), `leandojo` (lean-dojo's Dojo), `replay` "
        "(traced transitions from the store, no Lean: a lower bound of what Lean accepts).",
    )
    tactic_timeout_s: float = Field(60.0, gt=0, description="Wall-clock limit of one tactic.")
    theorem_timeout_s: float = Field(
        600.0, gt=0, description="Wall-clock limit of one theorem: starting it, or checking a whole proof."
    )
    memory_limit_mb: int | None = Field(
        MEMORY_LIMIT_MB,
        ge=256,
        description="Memory limit of each Lean process (address space, RLIMIT_AS), MiB; null: none. The default "
        'fits `import Mathlib` (docs/lean-backends.md, "Memory").',
    )
    workers: int = Field(1, ge=1, le=256, description="Lean processes (repl) or concurrent requests (kimina) to use.")
    work_dir: str | None = Field(
        None, description="Where each Lean process gets a working folder of its own; default: a new temporary folder."
    )
    allowed_axioms: list[str] = Field(
        default_factory=lambda: list(DEFAULT_ALLOWED_AXIOMS),
        description="Axioms a proof may depend on and still count as proved (`sorryAx` and `Lean.ofReduceBool` never should).",
    )
    recheck: Literal["repl", "kimina"] | None = Field(
        None,
        description="With kind `leandojo` (which cannot report axioms nor check the statement): the "
        "whole-proof backend that re-checks every finished proof, so it can count as proved. "
        "null: the Dojo's finished proofs stay `unverified`, out of pass@k and rewards.",
    )
    repl: ReplOptions = Field(default_factory=ReplOptions, description="Options of the `repl` backend.")
    kimina: KiminaOptions = Field(default_factory=KiminaOptions, description="Options of the `kimina` backend.")
    leandojo: LeanDojoOptions = Field(default_factory=LeanDojoOptions, description="Options of the `leandojo` backend.")
    sandbox: SandboxSettings = Field(
        default_factory=SandboxSettings, description="How Lean processes are contained (bubblewrap)."
    )
    options: dict[str, dict] = Field(
        default_factory=dict,
        description="{backend name: its options}, for backends registered outside Dojoflow (tasks/lean/registry.py).",
    )
    gold: GoldSettings = Field(
        default_factory=GoldSettings,
        description="The gold-standard check: comparator's kernel replay of every accepted proof (on by default "
        'where installed; docs/lean-backends.md, "Verdict levels").',
    )
    verification_cache: bool = Field(
        True,
        description="Remember Lean's answer to each whole proof in the store's catalog (tasks/lean/verified.py), keyed "
        "by toolchain, header, statement, proof and verdict rule version, so search, evaluation, `dojoflow prove` and "
        "GRPO rewards check a proof once; errors are never remembered. Off: every check asks Lean.",
    )

    @field_validator("kind")
    @classmethod
    def _registered(cls, kind: str) -> str:
        from .registry import backends

        if kind not in backends():
            raise ValueError(f"backend.kind {kind!r} is not a Lean backend: use one of {', '.join(backends())}")
        return kind

    @model_validator(mode="after")
    def _recheck_needs_dojo(self):
        if self.recheck is not None and self.kind != "leandojo":
            raise ValueError(
                f"backend.recheck is {self.recheck!r} with kind {self.kind!r}: only the leandojo backend's proofs "
                "need a re-check; remove backend.recheck, or set kind: leandojo"
            )
        return self
