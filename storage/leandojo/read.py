"""Reading an export: a pipeline of short steps from the folder to one `RepoData` per
repository it holds (the traced repository and dependencies such as mathlib or std,
each keyed by its own url and commit). Nothing is written here."""

from __future__ import annotations

import gc
import json
from collections import defaultdict
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa

from .. import schemas
from ..errors import InputError
from ..ids import repo_id as make_repo_id
from ..ids import repo_name
from ..repo_data import RepoData
from ..splits import SplitSettings, assign_novel_premises, assign_random
from .corpus import FilesAndPremises, Owners, read_corpus, read_traced
from .fields import declared_repos
from .files import MAX_METADATA_BYTES, check_root, load_json, present, read_bytes
from .records import LISTED, TheoremKey
from .tables import theorem_tables
from .theorems import SplitsRead, read_splits

Repo = tuple[str, str]


def read_export(path: str | Path, split_settings: SplitSettings | None = None) -> list[RepoData]:
    """Parse and validate a LeanDojo export; return one RepoData per repository in it."""
    with gc_paused():
        return _read_export(Path(path), split_settings or SplitSettings())


@contextmanager
def gc_paused():
    """Pause Python's cycle collector: reading an export creates a few hundred thousand
    objects (no cycles among them), and the collector's passes over them took a fifth of
    the reading time (docs/leandojo-export.md). Garbage is still freed by reference counts."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _read_export(root: Path, settings: SplitSettings) -> list[RepoData]:
    check_root(root)
    metadata = read_metadata(root)
    read = read_splits(root, declared_repos(metadata))
    check_split_kinds_agree(root, read)
    by_repo, order_of = _group_by_repo(read.theorems)
    main = main_repo(metadata, by_repo)
    owner = Owners(read.theorems, list(by_repo), main)
    corpus = read_corpus(root, owner, read_traced(root), read.theorems)
    now = datetime.now(UTC).replace(microsecond=0)
    out = [
        _repo_data(repo, keys, order_of[repo], read, corpus, metadata, repo == main, settings, root, now)
        for repo, keys in by_repo.items()
    ]
    out.sort(key=lambda d: (d.repository["url"], d.repository["commit"]) != main)
    return out


def read_metadata(root: Path) -> dict:
    path = root / "metadata.json"
    if not present(path):
        return {}
    metadata = load_json(path, read_bytes(path, root, MAX_METADATA_BYTES))
    if not isinstance(metadata, dict):
        raise InputError(path, "expected a JSON object", "re-create the export")
    return metadata


def check_split_kinds_agree(root: Path, read: SplitsRead) -> None:
    """Refuse an export without theorems, or whose two split kinds hold different theorems."""
    if not read.theorems:
        raise InputError(root, "the export holds no theorems", "export a repository that has theorems")
    if len(read.split_of) == 2:
        a, b = (seen.keys() for seen in read.split_of.values())
        if a != b:  # name the first theorem, in reading order, that one kind lacks
            missing = next((k for k in a if k not in b), None) or next(k for k in b if k not in a)
            raise InputError(
                root,
                f"theorem {missing.full_name} ({missing.file_path}) is in one split kind but not the other",
                "re-create the export: random/ and novel_premises/ must hold the same theorems",
            )


def _group_by_repo(theorems: dict) -> tuple[dict[Repo, list[TheoremKey]], dict[Repo, list[int]]]:
    """Each repository's theorem keys, and each theorem's position in the export."""
    by_repo: dict[Repo, list[TheoremKey]] = defaultdict(list)
    order_of: dict[Repo, list[int]] = defaultdict(list)
    for i, key in enumerate(theorems):
        by_repo[key.repo].append(key)
        order_of[key.repo].append(i)
    return by_repo, order_of


def main_repo(metadata: dict, by_repo: dict) -> Repo:
    """The traced repository: metadata's `from_repo`, else the one with most theorems."""
    from_repo = metadata.get("from_repo") or {}
    main = (from_repo.get("url"), from_repo.get("commit")) if isinstance(from_repo, dict) else None
    return main if main in by_repo else max(by_repo, key=lambda k: len(by_repo[k]))


def splits_of(
    keys: list[TheoremKey], read: SplitsRead, assigned: bool, settings: SplitSettings, used: list | None = None
) -> tuple[list, list]:
    """(random, novel_premises) split of each theorem: the export's, else computed (`used`: the
    premises each theorem's tactics name, when the records no longer hold their tactics)."""
    ident = [(k.url, k.file_path, k.full_name) for k in keys]
    if assigned and "random" in read.split_of:
        random_split = [read.split_of["random"][k] for k in keys]
    else:
        random_split = assign_random(ident, settings)
    if assigned and "novel_premises" in read.split_of:
        novel_split = [read.split_of["novel_premises"][k] for k in keys]
    else:
        if used is None:
            used = [{a.full_name for t in read.theorems[k].traced_tactics for a in t.annotated_tactic[1]} for k in keys]
        novel_split = assign_novel_premises(ident, used, settings)
    return random_split, novel_split


def _repo_data(
    repo: Repo,
    keys: list[TheoremKey],
    order: list[int],
    read: SplitsRead,
    corpus: FilesAndPremises,
    metadata: dict,
    is_main: bool,
    settings: SplitSettings,
    root: Path,
    now: datetime,
) -> RepoData:
    rid = make_repo_id(*repo)
    assigned = metadata.get("dojoflow_splits") != "unassigned"
    splits = splits_of(keys, read, assigned, settings)
    theorem_table, tactic_table = theorem_tables(rid, keys, order, read.theorems, read.extras, splits)
    repository = repository_row(repo, read, metadata, is_main, settings, root, now)
    return RepoData(
        repository=repository,
        files=pa.Table.from_pylist([{"repo_id": rid, **f} for f in corpus.files.get(repo, [])], schema=schemas.FILES),
        theorems=theorem_table,
        tactics=tactic_table,
        premises=pa.Table.from_pylist(
            [{"repo_id": rid, **p} for p in corpus.premises.get(repo, [])], schema=schemas.PREMISES
        ),
    )


def repository_row(
    repo: Repo, read: SplitsRead, metadata: dict, is_main: bool, settings: SplitSettings, root: Path, now: datetime
) -> dict:
    """The repository's row of REPOSITORIES (without its content hash)."""
    rid = make_repo_id(*repo)
    assigned = metadata.get("dojoflow_splits") != "unassigned"
    split_record = {"kept_from_export": [k for k in schemas.SPLIT_KINDS if assigned and k in read.split_of]}
    from_repo = metadata.get("from_repo") if isinstance(metadata.get("from_repo"), dict) else {}
    lean_version = _text(metadata.get("lean_version") or from_repo.get("lean_version")) or toolchain_beside(root)
    return {
        "repo_id": rid,
        "url": repo[0],
        "commit": repo[1],
        "name": repo_name(repo[0]),
        "lean_version": lean_version if is_main else None,
        "source": _text(metadata.get("dojoflow_source")) or "leandojo_export",
        "source_path": str(root.resolve()),
        "commit_time": _parse_time(metadata.get("commit_time")) if is_main else None,
        "ingested_at": now,
        "split_settings": json.dumps({**split_record, **settings.model_dump()}, sort_keys=True),
        "metadata": _metadata_of(metadata, repo, is_main),
    }


def _metadata_of(metadata: dict, repo: Repo, is_main: bool) -> str | None:
    """The metadata stored with a repository: the export's own for its main repository; for
    another, its entry under `repositories` (a Dojoflow export lists each one's leandojo_version
    and from_repo there: an export -> import -> export kept them for the main repository only)."""
    if is_main:
        return json.dumps(metadata, sort_keys=True, ensure_ascii=False)
    listed = metadata.get("repositories")
    for entry in listed if isinstance(listed, list) else []:
        if isinstance(entry, dict) and (entry.get("url"), entry.get("commit")) == tuple(repo):
            kept = {k: v for k, v in entry.items() if k not in ("url", "commit")}
            return json.dumps({**kept, LISTED: True}, sort_keys=True, ensure_ascii=False) if kept else None
    return None


def toolchain_beside(root: Path) -> str | None:
    """The Lean version (`v4.20.0`) of an export whose metadata.json names none: LeanDojo's own
    exports record `leandojo_version` and `from_repo: {url, commit}` only (Dojoflow's traces add
    `lean_version`, tasks/tracing/convert.py). Read from a `lean-toolchain` in the export folder,
    or, for the sample's exports, from the sample's Lean sources (storage/sample/lean/<Repo>/);
    None when neither is there (the card then says "not recorded in the export")."""
    from storage.sample import SAMPLE_ROOT

    root = Path(root).resolve()
    candidates = [root / "lean-toolchain"]
    if root.parent == SAMPLE_ROOT / "leandojo":
        candidates.append(SAMPLE_ROOT / "lean" / root.name / "lean-toolchain")
    for path in candidates:
        if path.is_file() and (text := path.read_text().strip()):
            return text.rsplit(":", 1)[-1]  # "leanprover/lean4:v4.20.0" -> "v4.20.0", as lean-dojo reads it
    return None


def _text(value) -> str | None:
    """A metadata value kept as text in the catalog (anything else is dropped there, and
    stays in the verbatim `metadata` column)."""
    return value if isinstance(value, str) else None


def _parse_time(value) -> datetime | None:
    if not value:
        return None
    try:
        t = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=UTC)


def read_exports(
    paths: list[str | Path], split_settings: SplitSettings | None = None, workers: int | None = None
) -> list[RepoData]:
    """`read_export` of each path, in parallel processes when there are several exports
    and cores to spare; the repositories of all of them, the first export's first.

    A repository held by two exports (a shared dependency) is kept once when both hold
    the same content, and is an error naming both exports when they differ.
    """
    paths = [Path(p) for p in paths]
    if not paths:
        raise InputError("PATH", "no export given", "name at least one LeanDojo export folder")
    outcomes = _read_all(paths, split_settings, _workers(paths, workers))
    out: dict[str, tuple[RepoData, Path]] = {}
    for path, outcome in zip(paths, outcomes):
        if isinstance(outcome, tuple):  # an InputError, re-raised as the worker found it
            raise InputError(*outcome)
        keep_once(out, path, outcome)
    return [data for data, _ in out.values()]


def keep_once(out: dict, path: Path, repositories) -> None:
    """Add the `repositories` of the export at `path` to `out` ({repo_id: (repository, export)}):
    one already there (a dependency two exports share) is kept once when both hold the same
    content, and is an InputError naming both exports when they differ."""
    for data in repositories:
        if data.repo_id not in out:
            out[data.repo_id] = (data, path)
        elif out[data.repo_id][0].content_hash() != data.content_hash():
            raise InputError(
                path,
                f"repository {data.repo_id} is also in {out[data.repo_id][1]}, with different content",
                "import the two exports separately (with --replace for the one that should win)",
            )


PARALLEL_IMPORT_BYTES = 32 * 2**20
PARALLEL_IMPORT_CORES = 4


def _workers(paths: list[Path], workers: int | None) -> int:
    """A worker costs a process start and its imports (about a second of CPU) and sends its
    tables back: worth it for big exports on machines with cores to spare. On 2 cores it
    measured slower than one process (benchmarks/README.md), so it needs 4 or more."""
    if workers is not None:
        return workers
    import os

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    big = sum(_split_bytes(p) for p in paths) >= PARALLEL_IMPORT_BYTES
    return min(len(paths), cores) if big and cores >= PARALLEL_IMPORT_CORES else 1


def _read_all(paths: list[Path], split_settings, workers: int) -> list:
    if workers > 1 and len(paths) > 1:
        from concurrent.futures import ProcessPoolExecutor
        from multiprocessing import get_context

        # spawn, not fork: the parent may hold DuckDB's and Arrow's threads
        with ProcessPoolExecutor(workers, mp_context=get_context("spawn")) as pool:
            return list(pool.map(_read_export_outcome, paths, [split_settings] * len(paths)))
    return [_read_export_outcome(p, split_settings) for p in paths]


def _split_bytes(root: Path) -> int:
    """The size of the export's split files (regular files only: nothing is opened here)."""
    try:
        return sum(f.stat().st_size for f in root.glob("*/*.json") if f.is_file()) if root.is_dir() else 0
    except (OSError, UnicodeEncodeError):
        return 0


def _read_export_outcome(path: Path, split_settings: SplitSettings | None):
    """read_export's repositories, or its InputError's fields (a worker's exception
    would reach the parent without them)."""
    try:
        return read_export(path, split_settings)
    except InputError as e:
        return (e.source, e.problem, e.fix, e.where)
