"""The streaming import (issue 24): the same store as the in-memory import, byte for byte,
in memory bounded by a setting; every refusal of the import holds on it (the bad-input
suites, tests/storage/test_leandojo*.py, run through `import_export`, which streams)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import storage.leandojo.stream as stream
from storage.errors import InputError
from storage.leandojo import import_export, import_exports, read_exports, staged_exports
from storage.sample import SAMPLE_ROOT
from storage.store import Store
from storage.synthetic import write_synthetic_export

from .conftest import load_split, std_dependency

ROOT = Path(__file__).resolve().parents[2]


def _generator():
    """benchmarks/gen_leandojo4.py, loaded from its file."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import gen_leandojo4
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    return gen_leandojo4


def _generated(tmp_path: Path, theorems: int = 300) -> Path:
    """LeanDojo-Benchmark-4-style data at a small size (text lengths drawn from the sample's)."""
    return _generator().generate(tmp_path / "gen", theorems=theorems, premises=theorems, files=20, seed=3)


def _with_extras(tmp_path: Path) -> Path:
    """A synthetic export with a dependency, keys Dojoflow does not model and a record
    without a statement (the record-by-record path)."""
    exp = write_synthetic_export(tmp_path / "dep", "alpha", 40, 3, seed=1, extra_repos=[std_dependency()])
    recs = load_split(exp / "random" / "train.json")
    recs[0]["custom"] = {"a": [1]}
    recs[2]["traced_tactics"][0]["note"] = "kept"
    (exp / "random" / "train.json").write_text(json.dumps(recs))
    return exp


def _store_files(store: Store) -> dict:
    """Every file of the store's data and parts, by path; the repository row without the
    time of ingestion (the one thing two imports may differ in)."""
    out = {}
    for p in sorted(store.root.rglob("*")):
        rel = str(p.relative_to(store.root))
        if not p.is_file() or not rel.startswith(("data/", "parts/")):
            continue
        if p.name == "repository.json":
            out[rel] = {k: v for k, v in json.loads(p.read_text()).items() if k != "ingested_at"}
        elif p.name == "repositories.parquet":
            out[rel] = [{k: v for k, v in r.items() if k != "ingested_at"} for r in pq.read_table(p).to_pylist()]
        else:
            out[rel] = p.read_bytes()
    return out


def _no_fallback(monkeypatch) -> None:
    """The streaming reader reads these exports itself (the whole-file reader is only for
    naming what is wrong in a bad one)."""

    def refuse(*a, **k):
        raise AssertionError("the streaming import fell back to the whole-file reader")

    monkeypatch.setattr(stream, "read_export", refuse)


@pytest.mark.parametrize("source", ["sample", "generated", "extras"])
def test_the_streaming_import_writes_the_same_bytes_as_the_in_memory_import(tmp_path, monkeypatch, source):
    if source == "sample":
        exports = sorted((SAMPLE_ROOT / "leandojo").iterdir())
    else:
        exports = [_generated(tmp_path) if source == "generated" else _with_extras(tmp_path)]
    before = Store.open(tmp_path / "in-memory")
    before.ingest(read_exports(exports))  # the import as it was: whole exports, then ingest
    _no_fallback(monkeypatch)
    after = Store.open(tmp_path / "streamed")
    import_exports(after, exports)
    assert _store_files(after) == _store_files(before)


def test_batches_far_below_the_repository_give_the_same_repository(tmp_path, monkeypatch):
    """At a bound of 1 MiB the export is read in many batches and the tactics written in many
    row groups: the files' layout differs, their content and the content hash do not."""
    exp = _generated(tmp_path, theorems=1500)
    before = Store.open(tmp_path / "in-memory")
    before.ingest(read_exports([exp]))
    _no_fallback(monkeypatch)
    batches = []
    real = stream.array_batches
    monkeypatch.setattr(stream, "array_batches", lambda *a: (batches.append(1) or b for b in real(*a)))
    after = Store.open(tmp_path / "streamed")
    with staged_exports([exp], memory_mb=1) as repos:
        after.ingest(repos)
    assert len(batches) > 6  # more than one batch per split file
    assert list(after.folders()) == list(before.folders())
    assert [p.name for p in after.folders().values()] == [p.name for p in before.folders().values()]
    rid = after.repo_ids()[0]
    assert pq.ParquetFile(after.table_path(rid, "tactics")).num_row_groups > 1
    for table in ("files", "theorems", "tactics", "premises"):
        assert after.read_table(table).equals(before.read_table(table)), table
    # The snapshot parts, built a row group at a time from the streamed tactics: the same rows.
    parts = sorted(p.relative_to(before.root) for p in (before.root / "parts").rglob("*.parquet"))
    assert parts == sorted(p.relative_to(after.root) for p in (after.root / "parts").rglob("*.parquet"))
    for rel in parts:
        assert pq.read_table(after.root / rel).equals(pq.read_table(before.root / rel)), rel


def test_a_refused_export_leaves_no_staging_behind(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    exp = write_synthetic_export(tmp_path / "e", "alpha", 8, 2, seed=5)
    (exp / "corpus.jsonl").write_text("{not json\n")
    store = Store.open(tmp_path / "home")
    with pytest.raises(Exception, match="corpus.jsonl, line 1: malformed JSON"):
        import_export(store, exp)
    assert store.repo_ids() == []
    assert list((tmp_path / "tmp").iterdir()) == []


def _spoil(exp: Path, case: str) -> None:
    """One defect far into a file (past the first batch at a 1 MiB bound)."""
    path = exp / ("random/train.json" if case in ("field", "missing") else "novel_premises/train.json")
    recs = load_split(path)
    if case == "field":
        recs[-3]["start"] = "line 1"
    elif case == "twice":
        recs.append(dict(recs[-5]))
    elif case == "unknown":
        recs[-2] = {**recs[-2], "full_name": "Nowhere.thm"}
    path.write_text(json.dumps(recs))
    if case == "missing":
        (exp / "novel_premises" / "val.json").unlink()


@pytest.mark.parametrize("case", ["field", "twice", "unknown", "missing"])
def test_a_refusal_is_the_whole_file_readers_without_reading_the_export_again(tmp_path, monkeypatch, case):
    """The streaming path names a bad record as the whole-file reader does (its index in the
    file, not in its batch; its own wording for a duplicate or a theorem one split kind
    lacks) and never reads the export again to say so (issue 24: that cost the old reader's
    memory)."""
    exp = write_synthetic_export(tmp_path / "e", "alpha", 600, 3, seed=4)
    _spoil(exp, case)
    with pytest.raises(InputError) as whole:
        read_exports([exp])
    _no_fallback(monkeypatch)
    batches = []
    real = stream.array_batches
    monkeypatch.setattr(stream, "array_batches", lambda *a: (batches.append(1) or b for b in real(*a)))
    with pytest.raises(InputError) as streamed, staged_exports([exp], memory_mb=1):
        pass
    assert str(streamed.value) == str(whole.value)
    assert len(batches) > 6 or case == "missing"


_CHILD = """
import sys
from pathlib import Path
import storage.leandojo.stream as stream
def hwm():
    return int(next(l for l in open('/proc/self/status') if l.startswith('VmHWM')).split()[1]) // 1024
def refuse(*a, **k):
    raise AssertionError('fell back to the whole-file reader')
stream.read_export = refuse
warm, big, stage, bound = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4])
stream.stream_export(warm, stage, memory_mb=bound)  # loads what the reader loads on first use
open('/proc/self/clear_refs', 'w').write('5')  # VmHWM from here
base = hwm()
staged = stream.stream_export(big, stage, memory_mb=bound)
print(base, hwm(), sum(r.counts['tactics'] for r in staged))
"""
# What an import holds besides its batches: the Parquet writers' page and dictionary buffers
# (a megabyte or two per column, as `pq.write_table` writes): measured 45-55 MiB with the rest of
# what an import holds per theorem (about 1 KiB: its identity, once per split kind).
WRITERS_MIB = 64


def test_a_repository_larger_than_the_bound_is_read_under_it(tmp_path):
    """The streaming reader's own peak (a child process's VmHWM from after a first, small
    import) stays under the bound and the Parquet writers' fixed buffers, for a repository
    whose split files are many times the bound (text 10x the sample's: Mathlib-like states)."""
    gen_leandojo4 = _generator()
    warm = gen_leandojo4.generate(tmp_path / "warm", theorems=100, premises=100, files=10)
    big = gen_leandojo4.generate(tmp_path / "big", theorems=1600, premises=1600, files=40, text_scale=10)
    size = sum(f.stat().st_size for f in big.rglob("*.json*")) / 2**20
    bound = 4
    assert size > 4 * bound, size
    (tmp_path / "stage").mkdir()
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(warm), str(big), str(tmp_path / "stage"), str(bound)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=True,
    )
    base, peak, tactics = (int(x) for x in out.stdout.split())
    assert tactics > 3_000
    assert peak - base < bound + WRITERS_MIB, (base, peak, size)


_IMPORT_CHILD = """
import sys
from pathlib import Path
from storage.store import Store
from storage.leandojo import import_exports
def hwm():
    return int(next(l for l in open('/proc/self/status') if l.startswith('VmHWM')).split()[1]) // 1024
warm, big, home, bound = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4])
import_exports(Store.open(home / 'warm'), [warm], memory_mb=1)  # every path of a streamed import, once
open('/proc/self/clear_refs', 'w').write('5')  # VmHWM from here
base = hwm()
(added,) = import_exports(Store.open(home / 'big'), [big], memory_mb=bound)
print(base, hwm(), added.counts['tactics'])
"""


def _long_states(tmp_path: Path) -> Path:
    """400 theorems whose states before are 40 KB (Mathlib's longest are longer): 116 MB of split
    files, cheap to write and to read (the text is in few, long strings)."""
    exp = write_synthetic_export(tmp_path / "big", "big", 400, 4, seed=6)
    pad = "".join(chr(0x41 + (i * 7) % 26) for i in range(997)) * 40
    for kind in ("random", "novel_premises"):
        for split in ("train", "val", "test"):
            path = exp / kind / f"{split}.json"
            recs = load_split(path)
            for rec in recs:
                for j, tactic in enumerate(rec["traced_tactics"]):
                    tactic["state_before"] += f"\n{pad}{j}"
            path.write_text(json.dumps(recs))
    return exp


def test_a_repository_larger_than_the_bound_is_imported_under_it(tmp_path):
    """The whole import (reading, the content hash, moving in, the snapshot parts) of a
    repository whose tactics are many times the bound: the child process's own peak from
    after a first import stays under the bound plus what any import holds (the reading's
    writers, as above, and the allocators' kept pages): measured 78 MiB at 8 MiB, against
    243 MiB when the hash and the parts loaded the tactics whole (main before issue 24's
    second pass)."""
    warm = write_synthetic_export(tmp_path / "warm", "warm", 100, 3, seed=1)
    big = _long_states(tmp_path)
    size = sum(f.stat().st_size for f in big.rglob("*.json*")) / 2**20
    bound = 8
    assert size > 10 * bound, size
    out = subprocess.run(
        [sys.executable, "-c", _IMPORT_CHILD, str(warm), str(big), str(tmp_path / "home"), str(bound)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=True,
    )
    base, peak, tactics = (int(x) for x in out.stdout.split())
    assert tactics > 1_500
    assert peak - base < bound + 2 * WRITERS_MIB, (base, peak, size)  # main before: 243 MiB


def test_records_laid_out_otherwise_are_cut_one_by_one(tmp_path, monkeypatch):
    """Records whose first key is not `url`, indented: no batch boundary is found by pattern, so
    each record's end is found by msgspec; the store is the in-memory import's."""
    exp = write_synthetic_export(tmp_path / "e", "alpha", 400, 3, seed=2)
    for kind in ("random", "novel_premises"):
        for split in ("train", "val", "test"):
            path = exp / kind / f"{split}.json"
            recs = [dict(reversed(list(r.items()))) for r in load_split(path)]
            path.write_text(json.dumps(recs, indent=2))
    before = Store.open(tmp_path / "in-memory")
    before.ingest(read_exports([exp]))
    _no_fallback(monkeypatch)
    import storage.leandojo.jsonarray as jsonarray

    cut = []
    real = jsonarray._cut_by_record
    monkeypatch.setattr(jsonarray, "_cut_by_record", lambda *a: (cut.append(1) or b for b in real(*a)))
    after = Store.open(tmp_path / "streamed")
    with staged_exports([exp], memory_mb=1) as repos:
        after.ingest(repos)
    assert cut  # the train files are cut record by record
    assert _store_files(after).keys() == _store_files(before).keys()
    assert [p.name for p in after.folders().values()] == [p.name for p in before.folders().values()]
