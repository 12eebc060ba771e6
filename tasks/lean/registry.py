"""Which Lean backends exist: the one place a backend is declared (one `BackendDef` each, at
the end), as `tasks/trainers/registry.py` declares trainers.

The config (`backend.kind`), preflight, `open_backend` and the backend contract suite
(tests/lean/test_backend_contract.py) all read this registry. Declarations hold import
strings, so importing the registry imports no backend package (LeanInteract, lean-dojo).

    python -c "from tasks.lean.registry import backends; print(list(backends()))"
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from pydantic import BaseModel

from storage.errors import InputError


@dataclass(frozen=True)
class BackendDef:
    """One Lean backend (docs/lean-backends.md, "Adding a backend").

    `settings` is the model of its options: the `backend.<name>` section for the built-in
    backends, `backend.options.<name>` for one declared elsewhere (None: it has none).
    `available` and `opener` are import strings `module:function`: `available(settings)` raises
    InputError naming the missing piece and the fix, and starts no Lean process;
    `opener(settings, store)` returns the `LeanBackend`.
    """

    name: str
    settings: type[BaseModel] | None
    available: str
    opener: str
    description: str  # one line: what checks the proofs
    tactic_mode: bool = True  # False: whole proofs only (start/run_tactic answer "error")
    lower_bound: bool = False  # True: accepts only what it has seen (replay); never more than Lean

    def check_available(self, settings) -> None:
        _load(self.available)(settings)

    def open(self, settings, store):
        return _load(self.opener)(settings, store)

    def options(self, settings) -> BaseModel | None:
        """This backend's options out of `settings` (a BackendSettings), validated."""
        if self.settings is None:
            return None
        own = getattr(settings, self.name, None)
        if isinstance(own, self.settings):
            return own
        raw = settings.options.get(self.name, {})
        try:
            return self.settings.model_validate(raw)
        except ValueError as e:
            raise InputError(f"backend.options.{self.name}", f"is not valid: {e}", "fix the options") from None


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
    try:
        return _BACKENDS[name]
    except KeyError:
        raise InputError(
            name, "is not a Lean backend", f"use one of {', '.join(_BACKENDS)}", where="backend.kind"
        ) from None


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


def _builtin() -> None:
    from .config import KiminaOptions, LeanDojoOptions, ReplOptions

    register(
        BackendDef(
            "repl",
            ReplOptions,
            "tasks.lean.availability:check_repl",
            "tasks.lean.openers:open_repl",
            "the Lean REPL through LeanInteract, in each repository's checkout",
        )
    )
    register(
        BackendDef(
            "kimina",
            KiminaOptions,
            "tasks.lean.availability:check_kimina",
            "tasks.lean.openers:open_kimina",
            "a kimina-lean-server over HTTP",
            tactic_mode=False,
        )
    )
    register(
        BackendDef(
            "leandojo",
            LeanDojoOptions,
            "tasks.lean.availability:check_leandojo",
            "tasks.lean.openers:open_leandojo",
            "lean-dojo's Dojo on a traced repository",
        )
    )
    register(
        BackendDef(
            "replay",
            None,
            "tasks.lean.availability:check_replay",
            "tasks.lean.openers:open_replay",
            "the store's traced transitions, no Lean (a lower bound of what Lean accepts)",
            lower_bound=True,
        )
    )

    from .config import GoldSettings

    _GOLD["comparator"] = GoldDef(
        "comparator",
        GoldSettings,
        "tasks.lean.gold_backend:check_gold",
        "tasks.lean.gold_backend:open_gold",
        "leanprover/comparator: the proof rebuilt in a sandbox, exported with lean4export and replayed in a "
        "fresh kernel against the stored statement and the allowed axioms",
    )


_builtin()
