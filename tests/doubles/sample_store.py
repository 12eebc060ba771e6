"""A store holding the sample's three repositories, shared by the Lean backend tests."""

from __future__ import annotations

from pathlib import Path

from storage.leandojo import import_export
from storage.sample import sample_export_dirs
from storage.store import Store


def sample_store(home: Path) -> Store:
    """A new store under `home` with the sample imported (the real import, no Lean)."""
    store = Store.open(home)
    for export in sample_export_dirs():
        import_export(store, export)
    return store
