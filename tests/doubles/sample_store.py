"""A store holding the sample's three repositories, shared by the Lean backend tests
(import the fixtures `store` and `theorems` into a test module to use them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from storage.leandojo import import_export
from storage.sample import sample_export_dirs
from storage.store import Store


def sample_store(home: Path) -> Store:
    """A new store under `home` with the sample imported (the real import, no Lean)."""
    store = Store.open(home)
    for export in sample_export_dirs():
        import_export(store, export)
    return store


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return sample_store(tmp_path_factory.mktemp("home"))


@pytest.fixture(scope="module")
def theorems(store):
    """{full name: TheoremSpec} of every theorem of the sample."""
    from tasks.lean import load_theorems

    return {t.full_name: t for t in load_theorems(store)}
