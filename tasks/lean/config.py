"""Which Lean backend to use, and its limits: the `backend:` section of a proving or
GRPO config (YAML or the Prefect form). See docs/lean-backends.md.

    python -c "from tasks.lean.config import BackendSettings; print(BackendSettings(kind='replay'))"
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, create_model, field_validator, model_validator

from . import registry
from .guard import DEFAULT_ALLOWED_AXIOMS
from .options import GoldSettings, KiminaOptions, LeanDojoOptions, ReplOptions  # noqa: F401 (their old home)

# `import Mathlib` maps more than 9 GB of address space (kimina-lean-server#68), and
# LeanInteract's AutoLeanServer restarts a REPL whose resident memory reaches 0.8 x its
# `memory_hard_limit_mb`: 16 GiB leaves room for both (docs/lean-backends.md, "Memory").
MEMORY_LIMIT_MB = 16384


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


class _BackendSettingsBase(BaseModel):
    """The backend, its options and its limits: one `backend.<name>` section per registered backend
    (tasks/lean/registry.py), built from its declaration as `trainers:` is from the trainer registry,
    so adding a backend needs no edit here."""

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
    recheck: str | None = Field(
        None,
        description="With a backend that cannot report axioms nor check the statement (kind `leandojo`): the "
        "whole-proof backend (`repl` or `kimina`) that re-checks every finished proof, so it can count as proved. "
        "null: the Dojo's finished proofs stay `unverified`, out of pass@k and rewards.",
    )
    sandbox: SandboxSettings = Field(
        default_factory=SandboxSettings, description="How Lean processes are contained (bubblewrap)."
    )
    options: dict[str, dict] = Field(
        default_factory=dict,
        description="{backend name: its options}, for backends registered after this model was built (a plugin, a "
        "test); `backend.<name>: {...}` for such a backend lands here too (tasks/lean/registry.py).",
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

    @model_validator(mode="before")
    @classmethod
    def _late_sections(cls, data):
        """`backend.<name>` of a backend registered after this model was built goes to `options`."""
        if not isinstance(data, dict):
            return data
        late = [k for k in data if k not in cls.model_fields and k in registry.backends()]
        if not late:
            return data
        data = dict(data)
        data["options"] = {**dict(data.get("options") or {}), **{k: data.pop(k) for k in late}}
        return data

    @field_validator("kind")
    @classmethod
    def _registered(cls, kind: str) -> str:
        if kind not in registry.backends():
            raise ValueError(
                f"backend.kind {kind!r} is not a Lean backend: use one of {', '.join(registry.backends())}"
            )
        return kind

    @model_validator(mode="after")
    def _recheck_only_where_needed(self):
        if self.recheck is None:
            return self
        can = [n for n, d in registry.backends().items() if d.rechecks]
        if self.recheck not in can:
            raise ValueError(f"backend.recheck {self.recheck!r} cannot re-check proofs: use one of {', '.join(can)}")
        if not registry.get(self.kind).needs_recheck:
            need = [n for n, d in registry.backends().items() if d.needs_recheck]
            raise ValueError(
                f"backend.recheck is {self.recheck!r} with kind {self.kind!r}: only the {', '.join(need)} backend's "
                f"proofs need a re-check; remove backend.recheck, or set kind: {need[0] if need else '...'}"
            )
        return self


def _backend_settings_model() -> type[_BackendSettingsBase]:
    fields = {
        name: (d.options_model, Field(default_factory=d.options_model, description=f"Options of the `{name}` backend."))
        for name, d in registry.backends().items()
        if d.settings is not None
    }
    return create_model("BackendSettings", __base__=_BackendSettingsBase, __module__=__name__, **fields)


BackendSettings = _backend_settings_model()
