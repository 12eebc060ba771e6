"""LeanDojo export import/export: lossless round trip, idempotence, bad input."""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from storage import catalog
from storage.errors import FormatVersionError, InputError, RepositoryConflictError
from storage.leandojo import import_export, read_export, write_export
from storage.snapshot import SnapshotSettings, build_snapshot
from storage.store import Store
from storage.synthetic import write_synthetic_export

from .conftest import load_in_peer_corpus_loader, load_split, std_dependency, tree_state

ROOT = Path(__file__).resolve().parents[2]


def canon(records: list) -> list:
    return sorted(json.dumps(r, sort_keys=True, ensure_ascii=False) for r in records)


@pytest.fixture(scope="module")
def _imported_once(tmp_path_factory) -> tuple[Path, Path, dict]:
    """A home with `export_with_dep` (as the fixture writes it) imported once, and its files."""
    root = tmp_path_factory.mktemp("imported")
    export = write_synthetic_export(root / "alpha-export", "alpha", 40, 3, seed=1, extra_repos=[std_dependency()])
    store = Store.open(root / "home")
    import_export(store, export)
    return store.root.parent, export, tree_state(store.root)


@pytest.fixture
def imported(_imported_once, tmp_path_factory) -> tuple[Store, Path]:
    """(store, export): `export_with_dep` imported into a fresh store, shared by the tests that
    import it first and then only read the store or show that a refused import changed nothing
    (each takes its own `before`). Should a test have changed it, the next gets a new one."""
    home, export, state = _imported_once
    store = Store.open(home)
    if tree_state(store.root) == state:
        return store, export
    root = tmp_path_factory.mktemp("imported")
    store = Store.open(root / "home")
    import_export(store, export)
    return store, export


def test_one_export_with_a_dependency_becomes_two_repositories(store, export_with_dep):
    results = import_export(store, export_with_dep)
    repos = {r["name"]: r for r in store.repositories()}
    assert set(repos) == {"alpha", "std"}
    assert repos["alpha"]["url"] == "https://dojoflow.invalid/synthetic/alpha"
    assert repos["std"]["url"] == "https://dojoflow.invalid/synthetic/std"
    assert repos["alpha"]["commit"] != repos["std"]["commit"]
    counts = {r.repo_id: r.counts for r in results}
    assert counts[repos["std"]["repo_id"]]["theorems"] == 10
    assert counts[repos["alpha"]["repo_id"]]["theorems"] == 40
    # corpus files under .lake/packages/std belong to std
    std_files = store.read_table("files", [repos["std"]["repo_id"]])["path"].to_pylist()
    assert std_files and all(p.startswith(".lake/packages/std/") for p in std_files)


def test_import_then_export_gives_identical_records(imported, tmp_path):
    store, export_with_dep = imported  # export_with_dep imported once for the module
    ids = [r["repo_id"] for r in store.repositories()]
    out = write_export(store, tmp_path / "out", ids)
    for kind in ("random", "novel_premises"):
        for split in ("train", "val", "test"):
            a = load_split(export_with_dep / kind / f"{split}.json")
            b = load_split(out / kind / f"{split}.json")
            assert canon(a) == canon(b), (kind, split)
    src = [json.loads(x) for x in (export_with_dep / "corpus.jsonl").read_text().splitlines()]
    dst = [json.loads(x) for x in (out / "corpus.jsonl").read_text().splitlines()]
    assert dst == src  # same files, same dependency order, same premises
    assert (out / "traced_files.jsonl").read_text() == (export_with_dep / "traced_files.jsonl").read_text()
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["from_repo"]["url"].endswith("/alpha")
    assert len(meta["repositories"]) == 2


def test_round_trip_keeps_null_statement_missing_keys_and_unknown_keys(store, tmp_path):
    exp = write_synthetic_export(tmp_path / "e", "beta", 12, 2, seed=3)
    records = load_split(exp / "random" / "train.json")
    records[0]["theorem_statement"] = None
    del records[1]["theorem_statement"]
    records[2]["traced_tactics"] = []
    records[3]["custom_field"] = {"kept": [1, 2]}
    (exp / "random" / "train.json").write_text(json.dumps(records))
    np_records = {}
    for split in ("train", "val", "test"):
        for r in load_split(exp / "novel_premises" / f"{split}.json"):
            np_records[(r["file_path"], r["full_name"])] = split
    # keep the same theorems in novel_premises (edited copies)
    by_split = {"train": [], "val": [], "test": []}
    for split in ("train", "val", "test"):
        for r in load_split(exp / "random" / f"{split}.json"):
            by_split[np_records[(r["file_path"], r["full_name"])]].append(r)
    for split, recs in by_split.items():
        (exp / "novel_premises" / f"{split}.json").write_text(json.dumps(recs))
    import_export(store, exp)
    out = write_export(store, tmp_path / "out", store.repo_ids())
    assert canon(load_split(out / "random" / "train.json")) == canon(records)
    th = store.read_table("theorems").to_pylist()
    no_tactics = [t for t in th if t["num_tactics"] == 0]
    assert no_tactics, "a theorem without traced tactics is kept"


def test_importing_the_same_export_twice_changes_nothing(imported):
    store, export_with_dep = imported  # export_with_dep imported once for the module
    before = tree_state(store.data_dir)
    again = import_export(store, export_with_dep)
    assert {r.status for r in again} == {"unchanged"}
    assert tree_state(store.data_dir) == before


def test_changed_content_at_the_same_commit_needs_replace(store, tmp_path):
    exp = write_synthetic_export(tmp_path / "e", "gamma", 10, 2, seed=1)
    import_export(store, exp)
    recs = load_split(exp / "random" / "train.json")
    recs[0]["traced_tactics"][0]["tactic"] = "simp"
    (exp / "random" / "train.json").write_text(json.dumps(recs))
    npath = exp / "novel_premises"
    for split in ("train", "val", "test"):
        rs = load_split(npath / f"{split}.json")
        for r in rs:
            if r["full_name"] == recs[0]["full_name"]:
                r["traced_tactics"][0]["tactic"] = "simp"
        (npath / f"{split}.json").write_text(json.dumps(rs))
    with pytest.raises(RepositoryConflictError, match="--replace"):
        import_export(store, exp)
    assert [r.status for r in import_export(store, exp, replace=True)] == ["replaced"]
    tactics = store.read_table("tactics").to_pylist()
    assert any(t["tactic"] == "simp" for t in tactics)


def test_export_without_corpus_keeps_premises_from_annotations(store, tmp_path):
    exp = write_synthetic_export(tmp_path / "e", "delta", 10, 3, seed=2)
    (exp / "corpus.jsonl").unlink()
    import_export(store, exp)
    prem = store.read_table("premises").to_pylist()
    assert prem and all(p["from_annotation"] for p in prem)
    mentioned = {a["full_name"] for t in store.read_table("tactics").to_pylist() for a in t["annotations"]}
    assert {p["full_name"] for p in prem} == mentioned


# -- bad input: a clear error, and the store exactly as it was -------------------------
def _bad_cases(tmp_path):
    def mk(name):
        return write_synthetic_export(tmp_path / name, name, 6, 2, seed=5)

    cases = []
    e = mk("malformed")
    (e / "random" / "val.json").write_text('[{"url": ')
    cases.append((e, r"random/val.json: malformed JSON at line 1"))
    e = mk("missingfield")
    recs = load_split(e / "random" / "train.json")
    del recs[1]["file_path"]
    (e / "random" / "train.json").write_text(json.dumps(recs))
    cases.append((e, r"train.json, record 1 \(.*\): field `file_path` is missing"))
    e = mk("escape")
    recs = load_split(e / "random" / "train.json")
    recs[0]["file_path"] = "../../etc/passwd"
    (e / "random" / "train.json").write_text(json.dumps(recs))
    cases.append((e, r"escapes the repository"))
    e = mk("dup")
    recs = load_split(e / "random" / "train.json")
    (e / "random" / "train.json").write_text(json.dumps(recs + recs[:1]))
    cases.append((e, r"appears twice in random/"))
    e = mk("badcommit")
    recs = load_split(e / "random" / "train.json")
    recs[0]["commit"] = "main"
    (e / "random" / "train.json").write_text(json.dumps(recs))
    cases.append((e, r"commit 'main' is not a commit"))
    e = tmp_path / "empty"
    for kind in ("random", "novel_premises"):
        (e / kind).mkdir(parents=True)
        for split in ("train", "val", "test"):
            (e / kind / f"{split}.json").write_text("[]")
    cases.append((e, r"holds no theorems"))
    e = mk("missingfile")
    (e / "novel_premises" / "test.json").unlink()
    cases.append((e, r"novel_premises/test.json: file is missing"))
    cases.append((tmp_path / "nowhere", r"nowhere: does not exist"))
    e = tmp_path / "notanexport"
    e.mkdir()
    cases.append((e, r"no split folder found"))
    e = mk("nonutf8json")
    (e / "random" / "test.json").write_bytes(b'[{"url": "caf\xe9"}]')
    cases.append((e, r"random/test.json, line 1: is not UTF-8 text"))
    e = mk("nonutf8corpus")
    lines = (e / "corpus.jsonl").read_bytes().splitlines(keepends=True)
    (e / "corpus.jsonl").write_bytes(lines[0] + lines[1].replace(b'"premises"', b'"pr\xffmises"') + b"".join(lines[2:]))
    cases.append((e, r"corpus.jsonl, line 2: is not UTF-8 text"))
    e = mk("defpath")
    recs = load_split(e / "random" / "train.json")
    i = next(i for i, r in enumerate(recs) if r["traced_tactics"])
    recs[i]["traced_tactics"][0]["annotated_tactic"][1][0]["def_path"] = "Defpath/../../outside/X.lean"
    (e / "random" / "train.json").write_text(json.dumps(recs))
    cases.append(
        (
            e,
            rf"train.json, record {i} \(.*\), tactic 0, annotation 0: file path "
            r"'Defpath/../../outside/X.lean' escapes the repository",
        )
    )
    e = mk("importescape")
    corpus = [json.loads(x) for x in (e / "corpus.jsonl").read_text().splitlines()]
    corpus[2]["imports"] = ["Importescape/File0.lean", "../../../etc/passwd"]
    (e / "corpus.jsonl").write_text("".join(json.dumps(c) + "\n" for c in corpus))
    cases.append((e, r"corpus.jsonl, line 3, import 1: file path '../../../etc/passwd' escapes the repository"))
    e = mk("corpusimports")
    corpus = [json.loads(x) for x in (e / "corpus.jsonl").read_text().splitlines()]
    corpus[1]["imports"] = "Corpusimports/File0.lean"
    (e / "corpus.jsonl").write_text("".join(json.dumps(c) + "\n" for c in corpus))
    cases.append((e, r"corpus.jsonl, line 2: field `imports` should be a list"))
    e = mk("corpuspremise")
    corpus = [json.loads(x) for x in (e / "corpus.jsonl").read_text().splitlines()]
    del corpus[3]["premises"][4]["full_name"]
    (e / "corpus.jsonl").write_text("".join(json.dumps(c) + "\n" for c in corpus))
    cases.append((e, r"corpus.jsonl, line 4, premise 4: field `full_name` is missing"))
    e = mk("badpos")
    recs = load_split(e / "random" / "train.json")
    recs[0]["start"] = "12:3"
    (e / "random" / "train.json").write_text(json.dumps(recs))
    cases.append((e, r"field `start` should be a list"))
    return cases


def test_bad_exports_get_clear_errors_and_leave_the_store_unchanged(imported, tmp_path):
    store, export_with_dep = imported  # export_with_dep imported once for the module
    before = tree_state(store.root)
    for path, message in _bad_cases(tmp_path):
        with pytest.raises(InputError, match=message):
            import_export(store, path)
        assert tree_state(store.root) == before, path


def test_a_store_from_a_future_format_version_is_refused(tmp_path):
    s = Store.open(tmp_path / "h")
    (s.root / "FORMAT_VERSION.json").write_text(json.dumps({"format_version": 99}))
    with pytest.raises(FormatVersionError, match="format version 99.*upgrade Dojoflow"):
        Store.open(tmp_path / "h")


KILL_SCRIPT = """
import os, signal, sys
import pyarrow.parquet as pq
from storage.store import Store
from storage.leandojo import import_export
real = pq.write_table
calls = []
def write_then_die(*a, **k):
    real(*a, **k)
    calls.append(1)
    if len(calls) == 3:
        os.kill(os.getpid(), signal.SIGKILL)
pq.write_table = write_then_die
import_export(Store.open(sys.argv[1]), sys.argv[2])
"""


def test_import_killed_midway_leaves_the_store_readable_and_unchanged(store, export_with_dep, tmp_path):
    first = write_synthetic_export(tmp_path / "first", "first", 8, 2, seed=4)
    import_export(store, first)
    before = tree_state(store.data_dir)
    proc = subprocess.run(
        [sys.executable, "-c", KILL_SCRIPT, str(store.root.parent), str(export_with_dep)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
    )
    assert proc.returncode == -signal.SIGKILL
    # readable: the catalog and the data still answer, with only the first repository
    assert store.repo_ids() == [r["repo_id"] for r in store.repositories()]
    assert [r["name"] for r in store.repositories()] == ["first"]
    assert catalog.query(store, "SELECT count(*) AS n FROM theorems")["n"].to_pylist() == [8]
    # a later writer removes the orphan; the store is then exactly as before
    import_export(store, first)
    assert tree_state(store.data_dir) == before
    import_export(store, export_with_dep)
    assert sorted(r["name"] for r in store.repositories()) == ["alpha", "first", "std"]


def listing(root: Path) -> dict:
    """Every path under root with its bytes and modification time: any write shows."""
    return {
        str(p.relative_to(root)): (p.read_bytes(), p.stat().st_mtime_ns) if p.is_file() else "dir"
        for p in sorted(root.rglob("*"))
    }


def test_a_bad_export_writes_nothing_at_all(imported, tmp_path):
    store, export_with_dep = imported  # export_with_dep imported once for the module
    e = write_synthetic_export(tmp_path / "e", "eps", 5, 2, seed=1)
    assert len(read_export(e)) == 1  # valid as written
    # broken in the last file read, after every split file has been parsed
    (e / "traced_files.jsonl").write_text('{"traced_file_path": "Eps/File0.lean"}\n{"traced_file_path": 7}\n')
    store_before, export_before = listing(store.root.parent), listing(e)
    with pytest.raises(InputError, match=r"traced_files.jsonl, line 2: field `traced_file_path` should be a string"):
        import_export(store, e)
    # not a byte, not a lock file, not the catalog: the store was never opened for writing
    assert listing(store.root.parent) == store_before
    assert listing(e) == export_before


# -- several repositories in one export: all of them or none ---------------------------
def _std_export(tmp_path, name: str, tactic: str | None = None) -> Path:
    """An export of `name` holding std (as in export_with_dep), std's first tactic set to `tactic`."""
    return write_synthetic_export(
        tmp_path / f"{name}-export", name, 12, 2, seed=3, extra_repos=[std_dependency(tactic)]
    )


def test_a_conflict_on_a_later_repository_adds_none_of_them(store, export_with_dep, tmp_path):
    import_export(store, export_with_dep)  # alpha and std
    before = tree_state(store.root)
    views_before = catalog.query(store, "SELECT repo_id FROM repositories ORDER BY 1")
    changed = _std_export(tmp_path, "beta", tactic="simp")  # beta is new; std conflicts, and comes second
    assert [r.repository["name"] for r in read_export(changed)] == ["beta", "std"]
    with pytest.raises(RepositoryConflictError, match=r"repository std-.* is already in the store"):
        import_export(store, changed)
    assert sorted(r["name"] for r in store.repositories()) == ["alpha", "std"]
    assert tree_state(store.root) == before
    assert catalog.query(store, "SELECT repo_id FROM repositories ORDER BY 1") == views_before
    # with --replace both go in, together
    statuses = {
        r.repository["name"]: s.status
        for r, s in zip(read_export(changed), import_export(store, changed, replace=True))
    }
    assert statuses == {"beta": "added", "std": "replaced"}
    assert sorted(r["name"] for r in store.repositories()) == ["alpha", "beta", "std"]
    std_tactics = catalog.query(
        store,
        """SELECT t.tactic FROM tactics t JOIN repositories r USING (repo_id)
                                          WHERE r.name = 'std'""",
    )["tactic"].to_pylist()
    assert "simp" in std_tactics


KILL_AFTER = """
import importlib, os, signal, sys
from storage.leandojo import import_export
from storage.store import Store
module, _, attr = sys.argv[3].partition(":")
owner = importlib.import_module(module)
*path, name = attr.split(".")
for part in path:
    owner = getattr(owner, part)
real, calls = getattr(owner, name), []
def then_die(*a, **k):
    out = real(*a, **k)
    calls.append(1)
    if len(calls) == int(sys.argv[4]):
        os.kill(os.getpid(), signal.SIGKILL)
    return out
setattr(owner, name, then_die)
import_export(Store.open(sys.argv[1]), sys.argv[2])
"""


def _import_killed_after(store, export: Path, target: str, n: int = 1) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", KILL_AFTER, str(store.root.parent), str(export), target, str(n)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()[-2000:]


def _assert_consistent(store) -> list[str]:
    """The catalog shows exactly the repositories the store lists, and `dojoflow repos` runs."""
    from typer.testing import CliRunner

    from flows.cli import app

    ids = store.repo_ids()
    assert catalog.query(store, "SELECT repo_id FROM repositories ORDER BY 1")["repo_id"].to_pylist() == ids
    by_view = catalog.query(store, "SELECT repo_id, count(*) AS n FROM theorems GROUP BY 1 ORDER BY 1").to_pylist()
    assert by_view == [{"repo_id": r, "n": store.read_table("theorems", [r]).num_rows} for r in ids]
    out = CliRunner().invoke(app, ["repos", "--home", str(store.root.parent)], env={"COLUMNS": "200"})
    assert out.exit_code == 0, out.output
    return sorted(r["name"] for r in store.repositories())


def test_a_kill_after_the_first_repository_is_staged_leaves_the_store_unchanged(store, export_with_dep, tmp_path):
    import_export(store, write_synthetic_export(tmp_path / "first", "first", 8, 2, seed=4))
    before = tree_state(store.root)
    _import_killed_after(store, export_with_dep, "storage.store:Store._stage", 1)
    staged = [p.name for p in store.data_dir.iterdir() if p.name.startswith("alpha-")]
    assert staged, "the kill came after alpha's folder was renamed into data/"
    assert _assert_consistent(store) == ["first"]  # staged, not listed: invisible
    # apart from that folder, not a byte changed
    assert {k: v for k, v in tree_state(store.root).items() if not k.startswith(f"data/{staged[0]}/")} == before
    with store.writer():  # the next writer, whatever it writes, removes what no commit lists
        pass
    assert not (store.data_dir / staged[0]).exists()
    assert tree_state(store.root) == before
    statuses = [r.status for r in import_export(store, export_with_dep)]  # run again: completes
    assert statuses == ["added", "added"]
    assert _assert_consistent(store) == ["alpha", "first", "std"]
    assert len(list(store.data_dir.iterdir())) == 3  # one folder each, nothing left over


def test_a_kill_after_the_commit_leaves_views_that_readers_correct_and_the_next_import_repairs(
    store, export_with_dep, tmp_path
):
    import duckdb

    import_export(store, write_synthetic_export(tmp_path / "first", "first", 8, 2, seed=4))
    _import_killed_after(store, export_with_dep, "storage.store:Store._write_index", 1)

    def persisted_view_ids():
        con = duckdb.connect(str(store.catalog_path), read_only=True)
        try:
            return sorted(r[0] for r in con.sql("SELECT repo_id FROM repositories").fetchall())
        finally:
            con.close()

    assert len(persisted_view_ids()) == 1, "the kill came before the catalog views were refreshed"
    assert _assert_consistent(store) == ["alpha", "first", "std"]  # committed: all of the export, at once
    assert [r.status for r in import_export(store, export_with_dep)] == ["unchanged", "unchanged"]
    assert persisted_view_ids() == store.repo_ids()
    # parts the killed import never built (synthetic repositories repeat statement texts: the
    # cross-repository statement check, on by default, is not what this counts)
    snap = build_snapshot(store, store.repo_ids(), SnapshotSettings(contamination={"cross_repository": False}))
    assert sum(snap.counts["random"][s]["theorems"] for s in ("train", "val", "test")) == 58


# -- exports of several repositories (issue 7) -----------------------------------------
def _export_with_shared_dependency_files(tmp_path, name: str, seed: int) -> Path:
    """An export of `name` whose corpus lists two mathlib files (theorem-less there, so
    owned by `name` on import) that its first file imports: every project's export
    lists its dependencies' files like this."""
    dep_corpus = [
        {
            "path": ".lake/packages/mathlib/Mathlib/Init.lean",
            "imports": [],
            "premises": [
                {"full_name": "Mathlib.init", "code": "def init := 0", "start": [1, 1], "end": [1, 14], "kind": "def"}
            ],
        },
        {
            "path": ".lake/packages/mathlib/Mathlib/Basic.lean",
            "imports": [".lake/packages/mathlib/Mathlib/Init.lean"],
            "premises": [],
        },
    ]
    exp = write_synthetic_export(tmp_path / name, name, 12, 2, seed=seed, extra_repos=[([], dep_corpus)])
    corpus = [json.loads(x) for x in (exp / "corpus.jsonl").read_text().splitlines()]
    corpus[2]["imports"] = [".lake/packages/mathlib/Mathlib/Basic.lean"]
    (exp / "corpus.jsonl").write_text("".join(json.dumps(c) + "\n" for c in corpus))
    return exp


def test_an_export_of_several_repositories_lists_shared_files_once_and_loads_in_the_peers_loaders(store, tmp_path):
    import_export(store, _export_with_shared_dependency_files(tmp_path, "alpha", 1))
    import_export(store, _export_with_shared_dependency_files(tmp_path, "beta", 2))
    out = write_export(store, tmp_path / "out", store.repo_ids())
    paths = [json.loads(x)["path"] for x in (out / "corpus.jsonl").read_text().splitlines()]
    assert paths.count(".lake/packages/mathlib/Mathlib/Basic.lean") == 1
    assert len(paths) == 2 + 8 + 8
    assert load_in_peer_corpus_loader(out / "corpus.jsonl") == 1 + 2 * 8 * 6
    traced = [json.loads(x)["traced_file_path"] for x in (out / "traced_files.jsonl").read_text().splitlines()]
    assert len(traced) == len(set(traced))
    # and Dojoflow reads its own export back: the same theorems in a fresh store
    again = Store.open(tmp_path / "again")
    import_export(again, out)
    assert sorted(r["name"] for r in again.repositories()) == ["alpha", "beta"]
    assert again.read_table("theorems").num_rows == store.read_table("theorems").num_rows


def test_an_export_keeps_the_source_metadata_whatever_the_repository_order(store, tmp_path):
    exp = write_synthetic_export(tmp_path / "alpha-export", "alpha", 20, 2, seed=1, extra_repos=[std_dependency()])
    meta = json.loads((exp / "metadata.json").read_text())
    meta["dataset_name"] = "alpha-benchmark"
    (exp / "metadata.json").write_text(json.dumps(meta))
    import_export(store, exp)
    by_name = {r["name"]: r["repo_id"] for r in store.repositories()}
    out = write_export(store, tmp_path / "out", [by_name["std"], by_name["alpha"]])  # the dependency first
    got = json.loads((out / "metadata.json").read_text())
    assert got["dataset_name"] == "alpha-benchmark"
    assert got["leandojo_version"] == "4.20.0"
    assert got["from_repo"] == meta["from_repo"]
    assert [r.get("dataset_name") for r in got["repositories"]] == [None, "alpha-benchmark"]
    one = write_export(store, tmp_path / "one", [by_name["alpha"]])
    assert json.loads((one / "metadata.json").read_text())["creation_time"] == meta["creation_time"]


def test_an_export_is_byte_reproducible(imported, tmp_path):
    store, export_with_dep = imported  # export_with_dep imported once for the module
    a = write_export(store, tmp_path / "a", store.repo_ids())
    b = write_export(store, tmp_path / "b", store.repo_ids())
    assert tree_state(a) == tree_state(b)
    assert load_in_peer_corpus_loader(a / "corpus.jsonl") > 0


def test_export_into_the_stores_own_folders_is_refused(imported, tmp_path):
    store, export_with_dep = imported  # export_with_dep imported once for the module
    before = tree_state(store.root)
    for target in (store.root / "exports", store.data_dir / "x", store.root):
        with pytest.raises(InputError, match="store's own folders.*export to a folder outside the store"):
            write_export(store, target, store.repo_ids())
    assert tree_state(store.root) == before


# -- bad input (issue 8): each a clean InputError naming file, record and field ------------
def _mutate_first_record(exp: Path, change) -> None:
    recs = load_split(exp / "random" / "train.json")
    change(recs[0])
    (exp / "random" / "train.json").write_text(json.dumps(recs))


BAD_RECORDS = {
    "huge_position": (
        lambda r: r.update(start=[10**30, 1]),
        r"train.json, record 0 \(.*\): field `start` should be \[line, column\].*found \[1000000000000000000000000000000, 1\]",
    ),
    "nan_position": (
        lambda r: r.update(start=[float("nan"), 1]),
        r"train.json, record 0 \(.*\): field `start` should be \[line, column\].*found \[NaN, 1\]",
    ),
    "negative_position": (
        lambda r: r.update(start=[-3, 1]),
        r"record 0 \(.*\): field `start` should be \[line, column\] \(two integers, 0 or more\)",
    ),
    "end_before_start": (
        lambda r: r.update(start=[50, 1], end=[10, 4]),
        r"record 0 \(.*\): field `end` \[10, 4\] comes before `start` \[50, 1\]",
    ),
    "empty_url": (lambda r: r.update(url=""), r"record 0 \(.*\): field `url` is empty. give the repository's url"),
    "lone_surrogate": (
        lambda r: r.update(full_name="Bad\ud800name"),
        r"train.json, record 0: field `full_name` holds a lone surrogate \(\\ud800\)",
    ),
    "lone_surrogate_in_a_tactic": (
        lambda r: r["traced_tactics"][0].update(state_before="\udc00"),
        r"record 0: field `traced_tactics\[0\].state_before` holds a lone surrogate",
    ),
    "annotation_ending_before_it_starts": (
        lambda r: r["traced_tactics"][0]["annotated_tactic"][1][0].update(def_pos=[9, 1], def_end_pos=[3, 1]),
        r"record 0 \(.*\), tactic 0, annotation 0: field `def_end_pos` \[3, 1\] comes before `def_pos` \[9, 1\]",
    ),
    "boolean_position": (
        lambda r: r.update(start=[True, 1]),
        r"record 0 \(.*\): field `start` should be \[line, column\].*found \[true, 1\]",
    ),
    "tactic_not_text": (
        lambda r: r["traced_tactics"][0].update(tactic=5),
        r"record 0 \(.*\), tactic 0: field `tactic` should be a string, found 5",
    ),
    "url_with_credentials": (
        lambda r: r.update(url="https://user:secret@example.com/x/y"),
        r"record 0 \(.*\): the url .* holds credentials",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_RECORDS))
def test_a_bad_record_is_named_and_changes_nothing(imported, tmp_path, case):
    store, export_with_dep = imported  # export_with_dep imported once for the module
    before = tree_state(store.root)
    change, message = BAD_RECORDS[case]
    exp = write_synthetic_export(tmp_path / case, "bad", 6, 2, seed=5)
    _mutate_first_record(exp, change)
    with pytest.raises(InputError, match=message):
        import_export(store, exp)
    assert tree_state(store.root) == before


def test_deeply_nested_json_is_named_and_changes_nothing(imported, tmp_path):
    store, export_with_dep = imported  # export_with_dep imported once for the module
    before = tree_state(store.root)
    exp = write_synthetic_export(tmp_path / "deep", "deep", 6, 2, seed=5)
    text = (exp / "random" / "train.json").read_text()
    (exp / "random" / "train.json").write_text(text[:-1] + ', {"x": ' + "[" * 100_000 + "]" * 100_000 + "}]")
    with pytest.raises(InputError, match=r"random/train.json: JSON nested too deeply to read. re-create the file"):
        import_export(store, exp)
    lines = (exp / "corpus.jsonl").read_text().splitlines()
    (exp / "random" / "train.json").write_text(text)
    (exp / "corpus.jsonl").write_text("\n".join(lines[:1] + ["[" * 100_000 + "]" * 100_000] + lines[1:]) + "\n")
    with pytest.raises(InputError, match=r"corpus.jsonl, line 2: JSON nested too deeply"):
        import_export(store, exp)
    assert tree_state(store.root) == before


def test_a_premise_ending_before_it_starts_is_named(store, tmp_path):
    exp = write_synthetic_export(tmp_path / "e", "gamma", 6, 2, seed=5)
    corpus = [json.loads(x) for x in (exp / "corpus.jsonl").read_text().splitlines()]
    corpus[1]["premises"][2]["end"] = [1, 1]
    (exp / "corpus.jsonl").write_text("".join(json.dumps(c) + "\n" for c in corpus))
    with pytest.raises(InputError, match=r"corpus.jsonl, line 2, premise 2: field `end` \[1, 1\] comes before `start`"):
        import_export(store, exp)
    assert store.repo_ids() == []


def test_the_cli_shows_the_expected_position_format_in_full(tmp_path):
    from typer.testing import CliRunner

    from flows.cli import app

    exp = write_synthetic_export(tmp_path / "nan", "nan", 6, 2, seed=5)
    _mutate_first_record(exp, lambda r: r.update(start=[float("nan"), 1]))
    out = CliRunner().invoke(app, ["import", str(exp), "--home", str(tmp_path / "h")], env={"COLUMNS": "400"})
    assert out.exit_code == 2
    assert "should be [line, column]" in " ".join(out.output.split())
    assert not (tmp_path / "h").exists()


# -- several exports in one import (issue 11) -----------------------------------------------
def test_the_cli_imports_several_exports_in_one_commit(tmp_path):
    from typer.testing import CliRunner

    from flows.cli import app

    a = write_synthetic_export(tmp_path / "a", "alpha", 8, 2, seed=1, extra_repos=[std_dependency()])
    b = write_synthetic_export(tmp_path / "b", "beta", 8, 2, seed=2)
    home = tmp_path / "h"
    out = CliRunner().invoke(app, ["import", str(a), str(b), str(a), "--home", str(home)], env={"COLUMNS": "200"})
    assert out.exit_code == 0, out.output
    store = Store.open(home, create=False)
    assert sorted(r["name"] for r in store.repositories()) == ["alpha", "beta", "std"]  # a twice: once
    assert json.loads(store.index_path.read_text())["generation"] == 1  # one commit


def test_several_exports_read_in_parallel_give_what_one_by_one_gives(tmp_path):
    from storage.leandojo import read_exports

    paths = [write_synthetic_export(tmp_path / n, n, 10, 2, seed=i) for i, n in enumerate(["a", "b", "c"])]
    parallel = read_exports(paths, workers=2)
    serial = [r for p in paths for r in read_export(p)]
    assert [d.repo_id for d in parallel] == [d.repo_id for d in serial]
    assert [d.content_hash() for d in parallel] == [d.content_hash() for d in serial]


def test_a_bad_export_among_several_is_named_and_nothing_is_imported(store, tmp_path):
    from storage.leandojo import import_exports

    good = write_synthetic_export(tmp_path / "good", "good", 6, 2, seed=1)
    bad = write_synthetic_export(tmp_path / "bad", "bad", 6, 2, seed=2)
    _mutate_first_record(bad, lambda r: r.update(end=[0, 0]))
    with pytest.raises(InputError, match=r"bad/random/train.json, record 0 \(.*\): field `end` \[0, 0\] comes before"):
        import_exports(store, [good, bad], workers=2)
    assert store.repo_ids() == []
    changed = tmp_path / "changed"
    write_synthetic_export(changed, "std", 4, 2, seed=9)  # std at std's commit, other content
    first = write_synthetic_export(tmp_path / "first", "alpha", 6, 2, seed=1, extra_repos=[std_dependency()])
    _mutate_first_record(
        changed, lambda r: r.update(commit=std_dependency()[0][0]["commit"], url=std_dependency()[0][0]["url"])
    )
    with pytest.raises(InputError, match=r"repository std-.* is also in .*first, with different content"):
        import_exports(store, [first, changed], workers=1)
    assert store.repo_ids() == []


def _read_record_by_record(path, monkeypatch) -> list:
    """read_export with every split file sent to the record-by-record checks."""
    import storage.leandojo.theorems as leandojo

    with monkeypatch.context() as m:
        m.setattr(leandojo, "split_fast", lambda *a: None)
        return read_export(path)


def test_the_fast_path_reads_what_the_record_by_record_checks_read(tmp_path, monkeypatch):
    import storage.leandojo.theorems as leandojo

    exp = write_synthetic_export(tmp_path / "e", "alpha", 40, 3, seed=1, extra_repos=[std_dependency()])
    name = load_split(exp / "random" / "val.json")[0]["full_name"]
    short = name.rsplit(".", 1)[-1]  # a statement declares the constant full_name names
    for kind in ("random", "novel_premises"):  # non-ASCII escaped, as json.dump writes it by default
        for split in ("train", "val", "test"):  # the same theorem in both kinds (issue 26 C)
            recs = load_split(exp / kind / f"{split}.json")
            for r in recs:
                if r["full_name"] == name:
                    r["theorem_statement"] = f"theorem {short} : ∀ x ∈ 𝓝 a, x ≠ b"
            (exp / kind / f"{split}.json").write_text(json.dumps(recs))
    recs = load_split(exp / "random" / "train.json")  # keys Dojoflow does not model: this file only
    recs[0]["custom"] = {"a": [1]}
    recs[1].pop("theorem_statement")
    recs[2]["traced_tactics"][0]["note"] = "kept"
    (exp / "random" / "train.json").write_text(json.dumps(recs))
    for split in ("train", "val", "test"):  # the same record in both split kinds (issue 26 C)
        others = load_split(exp / "novel_premises" / f"{split}.json")
        for r in others:
            if r["full_name"] == recs[1]["full_name"]:
                r.pop("theorem_statement")
        (exp / "novel_premises" / f"{split}.json").write_text(json.dumps(others))
    checked = []
    real = leandojo.split_checked
    monkeypatch.setattr(leandojo, "split_checked", lambda source, *a: checked.append(source) or real(source, *a))
    fast = read_export(exp)
    assert checked == [exp / "random" / "train.json"]
    slow = _read_record_by_record(exp, monkeypatch)
    assert [d.repo_id for d in fast] == [d.repo_id for d in slow]
    for f, s in zip(fast, slow):
        assert {k: v for k, v in f.repository.items() if k != "ingested_at"} == {
            k: v for k, v in s.repository.items() if k != "ingested_at"
        }
        for name, table in f.tables().items():
            assert table.to_pylist() == s.tables()[name].to_pylist(), name
    statements = fast[0].theorems["theorem_statement"].to_pylist() + fast[1].theorems["theorem_statement"].to_pylist()
    assert any(s and s.endswith(" : ∀ x ∈ 𝓝 a, x ≠ b") for s in statements)


SECOND_KIND = {  # novel_premises/ holds the same theorems as random/: only identities are decoded there
    "lone_surrogate_in_another_field": (
        lambda recs: recs[0].update(custom="\ud800"),
        r"novel_premises/train.json, record 0: field `custom` holds a lone surrogate",
    ),
    "path_escapes": (
        lambda recs: recs[0].update(file_path="../x.lean"),
        r"novel_premises/train.json, record 0 \(.*\): file path '../x.lean' escapes the repository",
    ),
    "unknown_theorem": (
        lambda recs: recs[0].update(  # renamed with its statement, so the name rule holds and identity is at fault
            full_name="Nowhere.thm",
            theorem_statement=recs[0]["theorem_statement"].replace(recs[0]["full_name"].rsplit(".", 1)[-1], "thm", 1),
        ),
        r"theorem .* is in one split kind but not the other",
    ),
    "duplicate": (
        lambda recs: recs.append(dict(recs[0])),
        r"novel_premises/train.json, record \d+ \(.*\): "
        r"theorem .* appears twice in novel_premises/",
    ),
    "not_a_record": (lambda recs: recs.append(7), r"novel_premises/train.json, record \d+: expected a JSON object"),
}


@pytest.mark.parametrize("case", sorted(SECOND_KIND))
def test_a_bad_record_of_the_second_split_kind_is_named(store, tmp_path, case):
    change, message = SECOND_KIND[case]
    exp = write_synthetic_export(tmp_path / case, "bad", 20, 2, seed=5)
    recs = load_split(exp / "novel_premises" / "train.json")
    change(recs)
    (exp / "novel_premises" / "train.json").write_text(json.dumps(recs))
    with pytest.raises(InputError, match=message):
        import_export(store, exp)
    assert store.repo_ids() == []


def test_bytes_that_are_not_utf8_in_a_field_of_the_second_split_kind_are_named(store, tmp_path):
    exp = write_synthetic_export(tmp_path / "e", "bad", 20, 2, seed=5)
    text = (exp / "novel_premises" / "val.json").read_bytes()
    (exp / "novel_premises" / "val.json").write_bytes(
        text.replace(b'"theorem_statement": "', b'"theorem_statement": "\xff', 1)
    )
    with pytest.raises(InputError, match=r"novel_premises/val.json, line 1: is not UTF-8 text"):
        import_export(store, exp)
    assert store.repo_ids() == []
