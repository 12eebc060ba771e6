import json
from pathlib import Path

import pytest

from storage.store import Store
from storage.synthetic import synthetic_records, write_synthetic_export


def tree_state(root: Path) -> dict:
    """Every file under root with its bytes, to show a store is exactly as it was."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name not in ("catalog.duckdb", "catalog.duckdb.wal", ".lock", "catalog.lock")
    }


@pytest.fixture
def store(tmp_path) -> Store:
    return Store.open(tmp_path / "home")


def std_dependency(tactic: str | None = None) -> tuple[list, list]:
    """Theorems and corpus of `std` as a dependency (under .lake/packages/std/), for
    `extra_repos`; its first tactic set to `tactic` if given."""
    dep_th, dep_corpus, _, _ = synthetic_records("std", 10, 2, seed=9, num_files=2)
    pre = ".lake/packages/std/"
    dep_corpus = [dict(c, path=pre + c["path"], imports=[pre + i for i in c["imports"]]) for c in dep_corpus]
    for t in dep_th:
        t["file_path"] = pre + t["file_path"]
    if tactic is not None:
        next(t for t in dep_th if t["traced_tactics"])["traced_tactics"][0]["tactic"] = tactic
    return dep_th, dep_corpus


@pytest.fixture
def export_with_dep(tmp_path) -> Path:
    """An export of repo `alpha` that also holds theorems of its dependency `std`."""
    return write_synthetic_export(tmp_path / "alpha-export", "alpha", 40, 3, seed=1, extra_repos=[std_dependency()])


def load_split(path: Path) -> list:
    return json.loads(path.read_text())


def load_in_peer_corpus_loader(corpus_jsonl: Path) -> int:
    """Load `corpus.jsonl` as ReProver's and LeanDojo-v2's `Corpus.__init__` do, with
    the same assertions (lean-dojo/ReProver common.py; lean_dojo_v2 1.0.9
    lean_agent/common.py:205): a path is listed once, and after every file it imports
    (so the graph is acyclic). Returns the number of premises."""
    seen, premises = set(), 0
    for line in corpus_jsonl.read_text(encoding="utf-8").splitlines():
        data = json.loads(line)
        assert data["path"] not in seen, f"{data['path']} is listed twice"
        seen.add(data["path"])
        for p in data["imports"]:
            assert p in seen, f"{data['path']} imports {p} before it is listed"
        premises += len(data["premises"])
    return premises
