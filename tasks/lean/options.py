"""The options of the built-in Lean backends: the `backend.repl`, `backend.kimina` and
`backend.leandojo` sections of a config, and `backend.gold`, the gold checker's. Each is the `settings` of its backend's declaration
(tasks/lean/registry.py), which builds `BackendSettings`' per-backend sections from them; this
module imports only pydantic, so the registry imports no backend package.

    python -c "from tasks.lean.options import ReplOptions; print(ReplOptions())"
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


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
