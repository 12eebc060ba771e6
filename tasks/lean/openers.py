"""How each built-in backend opens (the `opener` of its BackendDef in tasks/lean/registry.py).
Kept apart from the backends' modules so that the registry imports none of their packages."""

from __future__ import annotations

from storage.errors import InputError

from .config import BackendSettings


def open_replay(settings: BackendSettings, store):
    from .replay import ReplayBackend

    if store is None:
        raise InputError(
            "backend.kind: replay",
            "the replay backend answers from a store, and none was given",
            "open the store first (`Store.open(home)`) and pass it",
        )
    return ReplayBackend(store)


def open_repl(settings: BackendSettings, store):
    from .repl import ReplBackend

    return ReplBackend(settings)


def open_kimina(settings: BackendSettings, store):
    from .kimina import KiminaBackend

    return KiminaBackend(settings)


def open_leandojo(settings: BackendSettings, store):
    from .leandojo import LeanDojoBackend

    return LeanDojoBackend(settings)
