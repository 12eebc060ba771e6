"""The streaming import: an export read a batch of records at a time and written to Parquet
as it goes, so memory stays near a setting whatever the repository's size (issue 24;
docs/leandojo-export.md, "Import: streamed in bounded memory").

The checks are the in-memory reader's own (`theorems.split_fast`/`split_checked` on each
batch, `corpus.corpus_line` on each line), in the same order, and a record is named by its
index in the file: a bad export gets the whole-file reader's message without being read whole
again. Only a file the streaming reader cannot cut (not UTF-8, malformed JSON, a line break
`str.splitlines` sees) is read again by `read.read_export`, which names what is wrong (and may
then cost the memory the old reader needed). The tables written are the in-memory reader's,
in the same order, and so is the content hash: a repository imported either way is the
same repository in the store (tests/storage/test_leandojo_stream.py compares the bytes).

What stays in memory grows with the number of theorems, not with the text: each theorem's
identity, split and statement, and the theorems table (no tactics). Tactics and premises,
the bulk of an export, are written in row groups of at most a fraction of the setting.
"""

from __future__ import annotations

import re
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import msgspec
import pyarrow as pa

from .. import schemas
from ..errors import InputError
from ..ids import repo_id as make_repo_id
from ..memory import release_arrow_memory
from ..splits import SplitSettings
from .corpus import FilesAndPremises, Owners, corpus_line, premises_from_annotations, read_traced
from .fields import declared_repos
from .files import check_root, present, read_chunks
from .jsonarray import NotStreamable, array_batches
from .read import (
    Repo,
    check_split_kinds_agree,
    gc_paused,
    keep_once,
    main_repo,
    read_export,
    read_metadata,
    repository_row,
    splits_of,
)
from .records import Tactic, TheoremKey
from .staging import StagedRepo, TableWriter, WriterPool
from .tables import theorem_tables
from .theorems import SplitsRead, read_splits, split_checked, split_fast

DEFAULT_MEMORY_MB = 256


class _Digest:
    """A statement as the streaming reader remembers it: its hash and length, equal to the same
    text (so another split kind's record is compared with it as with the text) at a fraction of
    its memory (a statement converted to Arrow also keeps a UTF-8 copy of itself)."""

    __slots__ = ("h", "n")

    def __init__(self, text: str):
        self.h, self.n = hash(text), len(text)

    @classmethod
    def of(cls, text: str | None):
        return None if text is None else cls(text)

    def __eq__(self, other) -> bool:
        if isinstance(other, _Digest):
            return (self.h, self.n) == (other.h, other.n)
        return isinstance(other, str) and len(other) == self.n and hash(other) == self.h

    def __hash__(self) -> int:
        return self.h


class _RepoRows:
    """One repository's rows on their way to its staging folder."""

    def __init__(self, repo: Repo, folder: Path, pool: WriterPool):
        self.rid = make_repo_id(*repo)
        self.folder = folder
        self.keys: list[TheoremKey] = []
        self.order: list[int] = []
        self.used: list[set] = []  # premises each theorem names, when splits are computed
        # Without their splits (known once both split kinds are read): set in `_finish`.
        self.theorems = TableWriter(folder / "theorems.unsplit.arrow", schemas.THEOREMS, pool, scratch=True)
        self.tactics = TableWriter(folder / "tactics.parquet", schemas.TACTICS, pool)
        self.premises = TableWriter(folder / "premises.parquet", schemas.PREMISES, pool)


class _Import:
    """The state of one export's streaming import."""

    def __init__(self, root: Path, settings: SplitSettings, workdir: Path, memory_mb: int):
        self.root, self.settings, self.workdir = root, settings, workdir
        self.batch_bytes = max(1 << 16, memory_mb * 2**20 // 16)  # JSON per batch: its objects take ~5x
        self.pool = WriterPool(memory_mb * 2**20 // 4)
        self.metadata = read_metadata(root)
        self.read = SplitsRead()
        self.read.declared = declared_repos(self.metadata)
        self.repos: dict[Repo, _RepoRows] = {}
        self.count = 0
        self.has_corpus = present(root / "corpus.jsonl")
        self.kinds = [k for k in schemas.SPLIT_KINDS if present(root / k)]
        assigned = self.metadata.get("dojoflow_splits") != "unassigned"
        self.need_used = not assigned or len(self.kinds) < len(schemas.SPLIT_KINDS)
        self.annotations_seen: set = set()
        self.shared: dict[str, str] = {}  # urls, commits and file paths, each held once

    def run(self) -> list[StagedRepo]:
        if not self.kinds:
            read_splits(self.root)  # raises what the whole-file reader says of no split folder
        for n, kind in enumerate(self.kinds):
            self.read.split_of[kind] = {}
            for split in schemas.SPLITS:
                source = self.root / kind / f"{split}.json"
                if not present(source):
                    raise InputError(
                        source, "file is missing", f"a LeanDojo export has {kind}/train.json, val.json and test.json"
                    )
                first = 0  # the file's index of the batch's first record, as the whole-file reader names it
                for batch in array_batches(source, self.root, self.batch_bytes):
                    first += (self._bodies if n == 0 else self._identities)(source, kind, split, batch, first)
        check_split_kinds_agree(self.root, self.read)
        by_repo = {repo: rows.keys for repo, rows in self.repos.items()}
        main = main_repo(self.metadata, by_repo)
        corpus = self._corpus(Owners(self.read.theorems, list(by_repo), main))
        now = datetime.now(UTC).replace(microsecond=0)
        out = [self._finish(repo, rows, corpus, repo == main, now) for repo, rows in self.repos.items()]
        out.sort(key=lambda d: (d.repository["url"], d.repository["commit"]) != main)
        return out

    def _items(self, source: Path, batch: bytes, bodies: bool, first: int):
        """(index in the file, identity, record) of each record of a batch: checked one by one,
        lazily, where the fast path fails (errors come in the whole-file reader's order)."""
        items = split_fast(batch, bodies, self.read.valid_repos, self.read.theorems, self.read.declared)
        return enumerate(items if items is not None else split_checked(source, batch, self.read, first), first)

    @staticmethod
    def _twice(source: Path, kind: str, key: TheoremKey, i: int) -> InputError:
        return InputError(
            source,
            f"theorem {key.full_name} in {key.file_path} appears twice in {kind}/",
            "remove the duplicate record",
            where=f"record {i} ({key.full_name})",
        )

    def _bodies(self, source: Path, kind: str, split: str, batch: bytes, first: int) -> int:
        """A batch of the first split kind: whole records, their rows written; how many."""
        seen, theorems = self.read.split_of[kind], self.read.theorems
        groups: dict[Repo, dict] = {}
        i = first - 1
        for i, (key, thm) in self._items(source, batch, True, first):
            key = self._canon(key)
            if key in seen or thm is None:  # None: read in another split file of this kind
                raise self._twice(source, kind, key, i)
            seen[key] = split
            groups.setdefault(key.repo, {})[key] = thm
            theorems[key] = msgspec.structs.replace(
                thm, theorem_statement=_Digest.of(thm.theorem_statement), traced_tactics=self._kept_tactics(thm)
            )
        for repo, group in groups.items():
            rows = self.repos.get(repo) or self.repos.setdefault(repo, self._new_rows(repo))
            keys = list(group)
            order = list(range(self.count, self.count + len(keys)))
            self.count += len(keys)
            placeholder = ["train"] * len(keys)  # splits are set when both kinds are read
            theorem_table, tactic_table = theorem_tables(
                rows.rid, keys, order, group, self.read.extras, (placeholder, placeholder)
            )
            rows.keys += keys
            rows.order += order
            rows.theorems.add(theorem_table)
            rows.tactics.add(tactic_table)
            if self.need_used:
                rows.used += [
                    {a.full_name for t in group[k].traced_tactics for a in t.annotated_tactic[1]} for k in keys
                ]
        return i + 1 - first

    def _canon(self, key: TheoremKey) -> TheoremKey:
        """`key` made of strings shared with the keys read before: a theorem is remembered once
        per split kind, and its strings once."""
        shared = self.shared.setdefault  # no generator: this runs once per record of each split kind
        return TheoremKey(
            shared(key.url, key.url),
            shared(key.commit, key.commit),
            shared(key.file_path, key.file_path),
            sys.intern(key.full_name),
        )

    def _kept_tactics(self, thm) -> list:
        """What a theorem keeps of its tactics once written: nothing, or (no corpus.jsonl) the
        annotations not seen before, which become the premises (`premises_from_annotations`)."""
        if self.has_corpus:
            return []
        new = []
        for t in thm.traced_tactics:
            for a in t.annotated_tactic[1]:
                if (a.def_path, a.full_name) not in self.annotations_seen:
                    self.annotations_seen.add((a.def_path, a.full_name))
                    new.append(a)
        return [Tactic("", ("", new), "", "")] if new else []

    def _new_rows(self, repo: Repo) -> _RepoRows:
        folder = self.workdir / f"repo-{len(self.repos)}"
        folder.mkdir()
        return _RepoRows(repo, folder, self.pool)

    def _identities(self, source: Path, kind: str, split: str, batch: bytes, first: int) -> int:
        """A batch of another split kind: identities only, each a theorem read already; how many.
        A theorem the first kind lacks is kept, as the whole-file reader keeps it, and named by
        `check_split_kinds_agree` once every file is read."""
        seen = self.read.split_of[kind]
        i = first - 1
        for i, (key, thm) in self._items(source, batch, False, first):
            key = self._canon(key)
            if key in seen:
                raise self._twice(source, kind, key, i)
            seen[key] = split
            if thm is not None:
                self.read.theorems[key] = msgspec.structs.replace(
                    thm, theorem_statement=_Digest.of(thm.theorem_statement), traced_tactics=[]
                )
        return i + 1 - first

    def _corpus(self, owner: Owners) -> FilesAndPremises:
        """corpus.jsonl a line at a time (premises written as they come), then the files it
        does not list: `corpus.read_corpus`'s rows, in its order."""
        out = FilesAndPremises()
        traced = read_traced(self.root)
        path = self.root / "corpus.jsonl"
        if self.has_corpus:
            held = 0
            for i, (rec, size) in enumerate(_jsonl(path, self.root, self.batch_bytes)):
                corpus_line(rec, i, path, owner, traced, out)
                held += size
                if held >= self.batch_bytes:  # the premises of about a batch of JSON
                    self._flush_premises(out)
                    held = 0
        for p in sorted(traced - out.seen):
            out.add_file(owner(p), p, [], None, True)
        for key in self.read.theorems:
            if key.file_path not in out.seen:
                out.add_file(key.repo, key.file_path, [], None, False)
        if not self.has_corpus:
            premises_from_annotations(self.read.theorems, owner, out)
        self._flush_premises(out)
        return out

    def _flush_premises(self, out: FilesAndPremises) -> None:
        for repo, premises in out.premises.items():
            if premises:
                rows = self.repos.get(repo) or self.repos.setdefault(repo, self._new_rows(repo))
                rid = rows.rid
                rows.premises.add(
                    pa.Table.from_pylist([{"repo_id": rid, **p} for p in premises], schema=schemas.PREMISES)
                )
                premises.clear()

    def _finish(self, repo: Repo, rows: _RepoRows, corpus: FilesAndPremises, is_main: bool, now) -> StagedRepo:
        assigned = self.metadata.get("dojoflow_splits") != "unassigned"
        random_split, novel_split = splits_of(
            rows.keys, self.read, assigned, self.settings, rows.used if self.need_used else None
        )
        counts = {"tactics": rows.tactics.close(), "premises": rows.premises.close()}  # fewer writers open at once
        theorems = TableWriter(rows.folder / "theorems.parquet", schemas.THEOREMS, self.pool)
        start = 0
        for piece in rows.theorems.pieces():
            end = start + piece.num_rows
            for name, values in (("split_random", random_split), ("split_novel_premises", novel_split)):
                at = piece.schema.get_field_index(name)
                piece = piece.set_column(at, piece.schema.field(at), pa.array(values[start:end], pa.string()))
            theorems.add(piece)
            start = end
        files = pa.Table.from_pylist(
            [{"repo_id": rows.rid, **f} for f in corpus.files.get(repo, [])], schema=schemas.FILES
        )
        TableWriter.write_whole(rows.folder / "files.parquet", files, schemas.FILES)
        counts = {"files": files.num_rows, "theorems": theorems.close(), **counts}
        repository = repository_row(repo, self.read, self.metadata, is_main, self.settings, self.root, now)
        return StagedRepo(repository, rows.folder, counts)


def _jsonl(path: Path, root: Path, chunk: int) -> Iterator:
    """(record, its size in bytes) of each line of a JSON-lines file (blank lines skipped); anything
    `files.load_jsonl` would refuse raises NotStreamable (it is read again to name it)."""
    rest = b""
    for piece in read_chunks(path, root, max(1 << 20, min(chunk, 1 << 24))):
        lines = (rest + piece).split(b"\n")
        rest = lines.pop()
        yield from _parse_lines(lines)
    yield from _parse_lines([rest])


# What `str.splitlines` (the whole-file reader's) also breaks lines at, besides "\n".
_OTHER_BREAKS = re.compile("[\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")


def _parse_lines(lines: list[bytes]) -> Iterator:
    for line in lines:
        try:
            text = line.decode("utf-8").removesuffix("\r")
        except UnicodeDecodeError:
            raise NotStreamable("not UTF-8") from None
        if not text.strip():
            continue
        if _OTHER_BREAKS.search(text):
            raise NotStreamable("a line break splitlines sees")
        try:  # msgspec refuses a lone surrogate escape (`files.load_jsonl` names it)
            yield msgspec.json.decode(line), len(line)
        except (msgspec.DecodeError, RecursionError):
            raise NotStreamable("malformed line") from None


def stream_export(
    path: str | Path, workdir: Path, settings: SplitSettings | None = None, memory_mb: int = DEFAULT_MEMORY_MB
) -> list[StagedRepo]:
    """Each repository of the export at `path`, staged as Parquet files under `workdir`.
    An export the streaming reader refuses raises the whole-file reader's error; one it cannot
    cut is read again by `read_export`, which names what is wrong (or, for a layout it reads
    and this does not, returns it)."""
    root = check_root(Path(path))
    settings = settings or SplitSettings()
    mine = Path(tempfile.mkdtemp(prefix="export-", dir=workdir))
    try:
        with gc_paused():  # as `read_export`: the cycle collector's passes over the theorems' keys
            staged = _Import(root, settings, mine, memory_mb).run()
        release_arrow_memory()  # the batches' pages, freed, before the repositories are hashed and moved
        return staged
    except InputError:  # named as the whole-file reader names it (tests/storage/test_leandojo*.py)
        shutil.rmtree(mine, ignore_errors=True)
        raise
    except NotStreamable:
        shutil.rmtree(mine, ignore_errors=True)
    mine.mkdir()
    return [StagedRepo.from_repo_data(data, mine / f"repo-{i}") for i, data in enumerate(read_export(root, settings))]


@contextmanager
def staged_exports(
    paths: list[str | Path], settings: SplitSettings | None = None, memory_mb: int = DEFAULT_MEMORY_MB
) -> Iterator[list[StagedRepo]]:
    """The repositories of several exports, staged in a temporary folder removed on leaving
    (its tables move into the store when they are ingested). A repository held by two exports
    is kept once when both hold the same content, and is an error naming both otherwise."""
    paths = [Path(p) for p in paths]
    if not paths:
        raise InputError("PATH", "no export given", "name at least one LeanDojo export folder")
    workdir = Path(tempfile.mkdtemp(prefix="dojoflow-import-"))
    try:
        out: dict[str, tuple[StagedRepo, Path]] = {}
        for path in paths:
            keep_once(out, path, stream_export(path, workdir, settings, memory_mb))
        yield [data for data, _ in out.values()]
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
