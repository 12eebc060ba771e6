"""A store holding the sample's three repositories, shared by the Lean backend tests
(import the fixtures `store` and `theorems` into a test module to use them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from storage.leandojo import import_exports
from storage.sample import sample_export_dirs
from storage.store import Store
from storage.tactic_text import is_sorry


def sample_store(home: Path) -> Store:
    """A new store under `home` with the sample imported (the real import, no Lean), in one commit:
    the same repositories and tables as one import per export, at 2/3 of the CPU (one catalog refresh)."""
    store = Store.open(home)
    import_exports(store, list(sample_export_dirs()))
    return store


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return sample_store(tmp_path_factory.mktemp("home"))


@pytest.fixture(scope="module")
def theorems(store):
    """{full name: TheoremSpec} of every theorem of the sample."""
    from tasks.lean import load_theorems

    return {t.full_name: t for t in load_theorems(store)}


def traced_proofs(store):
    """{(repo_id, full_name): [top-level tactics]} of every traced tactic proof without `sorry`:
    top level means each tactic starts from the state the previous one left."""
    rows = store.read_table("tactics").to_pylist()
    by: dict = {}
    for r in sorted(rows, key=lambda r: (r["repo_id"], r["full_name"], r["idx"])):
        by.setdefault((r["repo_id"], r["file_path"], r["full_name"]), []).append(r)
    out = {}
    for key, steps in by.items():
        if any(is_sorry(s["tactic"]) for s in steps):
            continue
        chain, state = [], steps[0]["state_before"]
        for s in steps:
            if s["state_before"] == state:
                chain.append(s["tactic"])
                state = s["state_after"]
        out[key] = chain
    return out
