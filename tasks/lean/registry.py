"""Which Lean backends exist: the one place a backend is declared (one `BackendDef` each, at
the end), as `tasks/trainers/registry.py` declares trainers. docs/adding-a-backend.md adds one.

A declaration carries every fact code outside the backend's own module asks about it (tactic
mode, lower bound, whether it needs a statement, the checkouts and header it reads, its package,
its Lean versions, what its figures compare to, whether it needs or can give a re-check): callers
ask the declaration, never compare a backend's name (tests/test_layering.py holds them to it).
The config (`backend.kind` and one `backend.<name>` section per backend), preflight,
`open_backend`, the ledger and the backend contract suite (tests/lean/test_backend_contract.py)
all read this registry. Declarations hold import strings, so importing the registry imports no
backend package (LeanInteract, lean-dojo).

    python -c "from tasks.lean.registry import backends; print(list(backends()))"
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from pydantic import BaseModel

from storage.errors import InputError, one_of

from .options import GoldSettings, KiminaOptions, LeanDojoOptions, ReplOptions
from .versions import Support


@dataclass(frozen=True)
class BackendDef:
    """One Lean backend (docs/adding-a-backend.md).

    `settings` is the model of its options (the class, or an import string `module:Class`), the
    config's `backend.<name>` section (None: it has none). `available` and `opener` are import strings `module:function`: `available(settings)`
    raises InputError naming the missing piece and the fix, and starts no Lean process;
    `opener(settings, store)` returns the `LeanBackend`. `toolchain(settings, theorem)` (an import
    string, optional) returns (where it was read, the `lean-toolchain` text) of the theorem's
    repository as the backend runs it, None where it fixes no version.
    """

    name: str
    settings: type[BaseModel] | str | None
    available: str
    opener: str
    description: str  # one line: what checks the proofs
    tactic_mode: bool = True  # False: whole proofs only (start/run_tactic answer "error")
    lower_bound: bool = False  # True: accepts only what it has seen (replay); never more than Lean; no gold check
    needs_statement: bool = True  # False: answers by name from the store (replay), no statement text needed
    checkouts: str | None = None  # the options field {repo_id or name: local checkout} it reads files from
    header: str | None = None  # the options field of a fixed header; set, the backend reads no checkout
    toolchain: str | None = None  # import string: the repository's lean-toolchain as the backend runs it
    package: str | None = None  # the Python package that talks to Lean (its version goes in run provenance)
    package_note: str = ""  # what that version does not say
    versions: Support | None = None  # the Lean versions it supports (tasks/lean/versions.py)
    comparable_to: str = ""  # what a pass rate it measured can be compared to (the card, the report)
    needs_recheck: bool = False  # cannot report axioms nor check the statement: `backend.recheck` decides
    rechecks: bool = False  # checks whole proofs with their axioms: can be another backend's `backend.recheck`

    def check_available(self, settings) -> None:
        _load(self.available)(settings)

    def open(self, settings, store):
        return _load(self.opener)(settings, store)

    @property
    def options_model(self) -> type[BaseModel] | None:
        """The model of its options (`settings`, its import string resolved)."""
        return _load(self.settings) if isinstance(self.settings, str) else self.settings

    def options(self, settings) -> BaseModel | None:
        """This backend's options out of `settings` (a BackendSettings), validated."""
        model = self.options_model
        if model is None:
            return None
        own = getattr(settings, self.name, None)
        if isinstance(own, model):
            return own
        raw = settings.options.get(self.name, {})
        try:
            return model.model_validate(raw)
        except ValueError as e:
            raise InputError(f"backend.options.{self.name}", f"is not valid: {e}", "fix the options") from None

    def fixed_header(self, settings) -> str:
        """The header every snippet is checked under, when its options set one; else ''."""
        return getattr(self.options(settings), self.header, "").strip() if self.header else ""

    def checkouts_of(self, settings) -> dict[str, str]:
        """{repo: checkout} of its `checkouts` option ({} where it has none): where statements are read."""
        return dict(getattr(self.options(settings), self.checkouts)) if self.checkouts else {}

    def checkout_option(self, settings) -> tuple[str, dict[str, str]] | None:
        """(the option's config path, {repo: checkout}) where this backend reads theorems' files from
        checkouts; None where it reads none (no such option, or a fixed header)."""
        if self.checkouts is None or self.fixed_header(settings):
            return None
        return f"backend.{self.name}.{self.checkouts}", self.checkouts_of(settings)

    def repository_toolchain(self, settings, theorem) -> tuple[str, str] | None:
        return _load(self.toolchain)(settings, theorem) if self.toolchain else None


def _load(ref: str):
    module, _, name = ref.partition(":")
    return getattr(importlib.import_module(module), name)


_BACKENDS: dict[str, BackendDef] = {}


def register(backend: BackendDef) -> BackendDef:
    """Add `backend` (or replace the one of the same name)."""
    if not backend.name.isidentifier():
        raise ValueError(f"backend name {backend.name!r} must be an identifier (it is a config value)")
    _BACKENDS[backend.name] = backend
    return backend


def unregister(name: str) -> None:
    """Remove a backend (tests that register one of their own)."""
    _BACKENDS.pop(name, None)


def backends() -> dict[str, BackendDef]:
    """Every registered backend, in registration order."""
    return dict(_BACKENDS)


def get(name: str) -> BackendDef:
    return one_of(_BACKENDS, name, "a Lean backend", where="backend.kind")


def of(settings) -> BackendDef:
    """The declaration of the backend `settings` (a BackendSettings) names."""
    return get(settings.kind)


def is_lower_bound(checker: str) -> bool:
    """Whether `checker` (a ProofCheck's or metric's checker name) only accepts what it has seen."""
    d = _BACKENDS.get(checker)
    return d is not None and d.lower_bound


def lake_path(settings) -> str:
    """The `lake` Dojoflow's own Lean processes run (the repl backend's `lake_path` option)."""
    return get("repl").options(settings).lake_path


@dataclass(frozen=True)
class GoldDef:
    """The gold-standard checker (docs/lean-backends.md, "Verdict levels"): it replays what a fast
    backend accepted. `settings` is its section of BackendSettings (`backend.gold`); `available(settings)`
    raises InputError where it is required and cannot run; `opener(backend, settings, store)` wraps
    the fast backend (a `LeanBackend`)."""

    name: str
    settings: type[BaseModel]
    available: str
    opener: str
    description: str

    def check_available(self, settings) -> None:
        _load(self.available)(settings)

    def open(self, backend, settings, store):
        return _load(self.opener)(backend, settings, store)


_GOLD: dict[str, GoldDef] = {}


def gold_checkers() -> dict[str, GoldDef]:
    """The gold checkers (one today: comparator)."""
    return dict(_GOLD)


def gold_checker() -> GoldDef:
    return _GOLD["comparator"]


# -- the backends: one declaration each --------------------------------------------------
BUILTIN = (
    BackendDef(
        "repl",
        ReplOptions,
        "tasks.lean.repl_project:check_repl",
        "tasks.lean.repl:open_repl",
        "the Lean REPL through LeanInteract, in each repository's checkout",
        checkouts="projects",
        toolchain="tasks.lean.repl_project:repl_toolchain",
        package="lean-interact",
        versions=Support(
            "repl",
            "lean-interact 0.11.6",
            "v4.8.0-rc1",
            "v4.33.0-rc1",
            "LeanInteract runs its REPL fork at the tag for the project's Lean version; tags exist for "
            "v4.8.0-rc1 to v4.33.0-rc1 (REPL v1.3.18), an older Lean raises ValueError, a newer one has no tag",
            "use a repository at a Lean version in the range, or a newer lean-interact once it has a tag for yours",
        ),
        comparable_to="repl: checked by Lean through the REPL, over the selected theorems of the split (capped by "
        "`max_theorems`); comparable to ReProver's pass@1 only with one 600 s beam search per theorem over "
        "the whole split; LeanDojo-v2 reports no pass rate",
        rechecks=True,
    ),
    BackendDef(
        "kimina",
        KiminaOptions,
        "tasks.lean.kimina:check_kimina",
        "tasks.lean.kimina:open_kimina",
        "a kimina-lean-server over HTTP",
        tactic_mode=False,
        checkouts="projects",
        header="header",
        package="kimina-client",
        package_note="the server's own version is not reported",
        versions=Support(
            "kimina",
            "kimina-lean-server",
            None,
            None,
            "the server checks with the one Lean version its workspace is built for (LEAN_SERVER_LEAN_VERSION, "
            "v4.15.0 by default); Dojoflow cannot read it from the client side",
            "run a server whose workspace is built for the repository's Lean version",
        ),
        comparable_to="kimina: whole proofs checked by Lean through a Kimina server; comparable to whole-proof "
        "pass@k (DeepSeek-Prover, Kimina-Prover) with the same number of samples, not to tactic-search pass@1",
        rechecks=True,
    ),
    BackendDef(
        "leandojo",
        LeanDojoOptions,
        "tasks.lean.leandojo:check_leandojo",
        "tasks.lean.leandojo:open_leandojo",
        "lean-dojo's Dojo on a traced repository",
        toolchain="tasks.lean.leandojo:dojo_toolchain",
        package="lean-dojo",
        versions=Support(
            "leandojo",
            "lean-dojo 4.20.0 (Dojo)",
            "v4.9.0",
            "v4.11",
            "the Dojo opens a repository traced by lean-dojo 4.20.0 (tracing's range, below); its tactic "
            "interaction is broken from v4.12.0 (LeanDojo#211, open; #250)",
            "use backend.kind: repl (Lean REPL through LeanInteract) for this repository",
        ),
        comparable_to="leandojo: checked by Lean through lean-dojo's Dojo, as ReProver does; comparable to "
        "ReProver's pass@1 only with one 600 s beam search per theorem over the whole split",
        needs_recheck=True,
    ),
    BackendDef(
        "replay",
        None,
        "tasks.lean.replay:check_replay",
        "tasks.lean.replay:open_replay",
        "the store's traced transitions, no Lean (a lower bound of what Lean accepts)",
        lower_bound=True,
        needs_statement=False,
        comparable_to="replay: a lower bound of what Lean accepts, over theorems with a traced tactic proof only "
        "(a proof counts only if every step is a traced transition); not comparable to a Lean-checked "
        "pass rate, nor to ReProver's pass@1 (one 600 s beam search per theorem over the whole split); "
        "LeanDojo-v2 reports no pass rate",
    ),
)


def _builtin() -> None:
    for backend in BUILTIN:
        register(backend)

    _GOLD["comparator"] = GoldDef(
        "comparator",
        GoldSettings,
        "tasks.lean.gold_backend:check_gold",
        "tasks.lean.gold_backend:open_gold",
        "leanprover/comparator: the proof rebuilt in a sandbox, exported with lean4export and replayed in a "
        "fresh kernel against the stored statement and the allowed axioms",
    )


_builtin()
