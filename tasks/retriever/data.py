"""Retriever data from a snapshot: the premise corpus, accessibility, gold premises, negatives.

Pure Python and numpy (no torch), so every rule here is testable in milliseconds.

- `PremiseCorpus`: the premises of a snapshot that have a corpus entry (`corpus.jsonl`
  or tracing; premises known only from a tactic annotation carry no code and are left
  out), with their files' transitive imports.
- Accessibility (LeanDojo/ReProver's rule): a premise is accessible to a theorem if it
  is in the theorem's file and ends at or before the theorem's start, or if it is in a
  file that the theorem's file imports, transitively.
- Gold premises of a tactic: its annotated premises found in the corpus, matched by
  (def_path, full_name). Annotations not in the corpus are counted in a `GoldReport`
  and never used, not as positives and not as retrieval targets.
- Negatives and the training pairs' order are in `pairs.py`.

Files and premises are keyed by (repo_id, path). A LeanDojo export stores a
dependency's files (`.lake/packages/...`) under the dependency's repo_id, so a path
that the theorem's repository does not hold is looked up in the other repositories
of the snapshot.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections import OrderedDict
from dataclasses import asdict, dataclass, field

import numpy as np
import pyarrow as pa

logger = logging.getLogger(__name__)

MARK_START, MARK_END = "<a>", "</a>"
_LINE = 1 << 32  # a position (line, column) as one integer: line * 2^32 + column
_NEVER = np.iinfo(np.int64).max  # in-file position of a premise without one: never "before" a theorem


def pos_key(pos) -> int | None:
    """(line, column) as one sortable integer; None for a missing position."""
    if pos is None or len(pos) < 2:
        return None
    return int(pos[0]) * _LINE + int(pos[1])


def premise_text(full_name: str, code: str | None) -> str:
    """The text a premise is encoded as: its code, its own name marked `<a>…</a>` (ReProver).

    The explicit `_root_.name` form is marked first, then the longest dotted suffix of the
    name that follows whitespace (optionally in «» quotes). A premise without code is its name.
    """
    if not code:
        return full_name
    annot = f"{MARK_START}{full_name}{MARK_END}"
    code = code.replace(f"_root_.{full_name}", annot)
    parts = full_name.split(".")
    for i in range(len(parts)):
        suffix = re.escape(".".join(parts[i:]))
        new = re.sub(rf"(?<=\s)«?{suffix}»?", lambda _m: annot, code)
        if new != code:
            return new
    return code


def read_files(snapshot, repo_ids=None) -> pa.Table:
    """The snapshot's files table (schema FILES)."""
    return snapshot.files(repo_ids)


class PremiseCorpus:
    """The retrievable premises of a snapshot and the import graph of their files.

    Premise i has `repo_ids[i]`, `file_paths[i]`, `full_names[i]`, `texts[i]`; `node_of[i]`
    is the index of its file in `nodes` ((repo_id, path) pairs).
    """

    def __init__(self, premises: pa.Table, files: pa.Table, lru_size: int = 256):
        self._add_premises(premises)
        self._by_path_name: dict[tuple[str, str], int] = {}
        for i, key in enumerate(zip(self.repo_ids, self.file_paths, self.full_names)):
            self._by_path_name.setdefault((key[1], key[2]), i)
        self._add_file_graph(files)
        self._closure: dict[int, np.ndarray] = {}
        self._lru: OrderedDict = OrderedDict()
        self._lru_size = lru_size
        self._hash: str | None = None
        self._unique: tuple[list[str], np.ndarray] | None = None

    def _add_premises(self, premises: pa.Table) -> None:
        """The premises with a corpus entry, once each, ordered by (repository, file, position, name)."""
        cols = {
            c: premises[c].to_pylist()
            for c in ("repo_id", "file_path", "full_name", "code", "start", "end", "from_annotation")
        }
        order = sorted(
            range(premises.num_rows),
            key=lambda i: (
                cols["repo_id"][i],
                cols["file_path"][i],
                pos_key(cols["start"][i]) or 0,
                cols["full_name"][i],
            ),
        )
        self.annotation_only = 0
        self.repo_ids: list[str] = []
        self.file_paths: list[str] = []
        self.full_names: list[str] = []
        self.texts: list[str] = []
        ends: list[int] = []
        self._by_key: dict[tuple[str, str, str], int] = {}
        for i in order:
            if cols["from_annotation"][i]:
                self.annotation_only += 1
                continue
            key = (cols["repo_id"][i], cols["file_path"][i], cols["full_name"][i])
            if key in self._by_key:
                continue
            self._by_key[key] = len(self.repo_ids)
            self.repo_ids.append(key[0])
            self.file_paths.append(key[1])
            self.full_names.append(key[2])
            self.texts.append(premise_text(key[2], cols["code"][i]))
            end = pos_key(cols["end"][i])
            if end is None:
                start = pos_key(cols["start"][i])
                end = _NEVER if start is None else start + 1
            ends.append(end)
        self.end_key = np.asarray(ends, dtype=np.int64)

    def _add_file_graph(self, files: pa.Table) -> None:
        """File nodes (every file of the files table and every premise's file), their imports, their premises."""
        f_repo, f_path, f_imports = (files[c].to_pylist() for c in ("repo_id", "path", "imports"))
        node_keys = sorted(set(zip(f_repo, f_path)) | set(zip(self.repo_ids, self.file_paths)))
        self.nodes: list[tuple[str, str]] = node_keys
        self._node_index = {k: j for j, k in enumerate(node_keys)}
        self._nodes_by_path: dict[str, list[int]] = {}
        for j, (_, path) in enumerate(node_keys):
            self._nodes_by_path.setdefault(path, []).append(j)
        self._import_paths: dict[int, list[str]] = {}
        for r, p, imps in zip(f_repo, f_path, f_imports):
            self._import_paths[self._node_index[(r, p)]] = list(imps or [])
        self.node_of = np.asarray(
            [self._node_index[(r, p)] for r, p in zip(self.repo_ids, self.file_paths)], dtype=np.int64
        )
        self._file_premises: dict[int, np.ndarray] = {}
        if len(self.node_of):
            by_node = np.argsort(self.node_of, kind="stable")
            bounds = np.flatnonzero(np.diff(self.node_of[by_node])) + 1
            for chunk in np.split(by_node, bounds):
                self._file_premises[int(self.node_of[chunk[0]])] = chunk

    @classmethod
    def from_snapshot(cls, snapshot, repo_ids=None) -> PremiseCorpus:
        return cls(snapshot.premises(repo_ids), read_files(snapshot, repo_ids))

    def __len__(self) -> int:
        return len(self.repo_ids)

    # -- lookups -----------------------------------------------------------------------
    def find(self, repo_id: str, def_path: str, full_name: str) -> int | None:
        """Index of the premise (def_path, full_name): in `repo_id` first, else in any repository."""
        i = self._by_key.get((repo_id, def_path, full_name))
        if i is None:
            i = self._by_path_name.get((def_path, full_name))
        return i

    def resolve_file(self, repo_id: str, path: str) -> int | None:
        """Node index of `path` as seen from `repo_id`: its own file, else another repository's."""
        j = self._node_index.get((repo_id, path))
        if j is None:
            candidates = self._nodes_by_path.get(path)
            j = candidates[0] if candidates else None
        return j

    def _direct_imports(self, node: int) -> list[int]:
        repo = self.nodes[node][0]
        out = []
        for p in self._import_paths.get(node, ()):
            j = self.resolve_file(repo, p)
            if j is not None and j != node:
                out.append(j)
        return out

    def imported_nodes(self, node: int) -> np.ndarray:
        """Boolean mask over `nodes`: the files `node` imports, transitively (itself excluded)."""
        if node in self._closure:
            return self._closure[node]
        n = len(self.nodes)
        stack, visiting = [node], set()
        while stack:  # iterative post-order DFS; a cycle (not legal Lean) only truncates a closure
            cur = stack[-1]
            if cur in self._closure:
                stack.pop()
                continue
            children = self._direct_imports(cur)
            if cur not in visiting:
                visiting.add(cur)
                stack.extend(c for c in children if c not in self._closure and c not in visiting)
                continue
            stack.pop()
            mask = np.zeros(n, dtype=bool)
            for c in children:
                mask[c] = True
                sub = self._closure.get(c)
                if sub is not None:
                    mask |= sub
            mask[cur] = False
            self._closure[cur] = mask
        return self._closure[node]

    def accessible_from(self, node: int | None, pos: int) -> np.ndarray:
        """Premise indices accessible at position `pos` of file `node` (imports first, then in-file)."""
        key = (node, pos)
        hit = self._lru.get(key)
        if hit is not None:
            self._lru.move_to_end(key)
            return hit
        if node is None:
            out = np.zeros(0, dtype=np.int64)
        else:
            imported = (
                np.flatnonzero(self.imported_nodes(node)[self.node_of]) if len(self.node_of) else np.zeros(0, np.int64)
            )
            in_file = self._file_premises.get(node, np.zeros(0, dtype=np.int64))
            in_file = in_file[self.end_key[in_file] <= pos]
            out = np.concatenate([imported.astype(np.int64), in_file.astype(np.int64)])
        out.setflags(write=False)
        self._lru[key] = out
        if len(self._lru) > self._lru_size:
            self._lru.popitem(last=False)
        return out

    def accessible(self, repo_id: str, file_path: str, theorem_start) -> np.ndarray:
        """Premise indices accessible to a theorem of `repo_id` in `file_path` starting at `theorem_start`."""
        pos = pos_key(theorem_start)
        return self.accessible_from(self.resolve_file(repo_id, file_path), -1 if pos is None else pos)

    def is_accessible(self, premise: int, node: int | None, pos: int) -> bool:
        if node is None:
            return False
        p_node = int(self.node_of[premise])
        if p_node == node:
            return bool(self.end_key[premise] <= pos)
        return bool(self.imported_nodes(node)[p_node])

    # -- identity of the corpus, for caches -----------------------------------------------------
    def unique_texts(self) -> tuple[list[str], np.ndarray]:
        """(distinct texts, index of each premise's text): identical premises are encoded once."""
        if self._unique is None:
            index: dict[str, int] = {}
            inverse = np.fromiter(
                (index.setdefault(t, len(index)) for t in self.texts), dtype=np.int64, count=len(self.texts)
            )
            self._unique = (list(index), inverse)
        return self._unique

    def content_hash(self) -> str:
        """sha256 of the distinct premise texts in order: what premise embeddings depend on."""
        if self._hash is None:
            h = hashlib.sha256()
            for t in self.unique_texts()[0]:
                h.update(t.encode("utf-8"))
                h.update(b"\x1e")
            self._hash = h.hexdigest()
        return self._hash


@dataclass(frozen=True)
class TacticExample:
    """One traced tactic whose annotations name at least one premise of the corpus."""

    repo_id: str
    theorem_id: str
    file_path: str
    full_name: str
    idx: int
    state: str  # the goal state before the tactic: the retrieval query
    node: int | None  # the theorem's file in `PremiseCorpus.nodes`
    pos: int  # the theorem's start, as `pos_key`
    gold: tuple[int, ...]  # corpus indices of the gold premises, sorted


@dataclass
class GoldReport:
    """What happened to the annotated premises of a split's tactics."""

    tactics: int = 0
    tactics_with_gold: int = 0
    annotations: int = 0  # distinct (def_path, full_name) per tactic, summed
    in_corpus: int = 0
    missing: int = 0  # annotated premises with no corpus entry: counted, never used
    inaccessible: int = 0  # gold premises the accessibility rule hides from the theorem (kept as gold)
    theorems_without_start: int = 0
    missing_examples: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


def build_examples(
    snapshot, split_kind: str, split: str, corpus: PremiseCorpus, repo_ids=None
) -> tuple[list[TacticExample], GoldReport]:
    """The tactics of one split that have gold premises, and a report of the rest."""
    tactics = snapshot.tactics(split_kind, split, repo_ids)
    return examples_from_rows(tactics.to_pylist(), theorem_starts(snapshot, split_kind, split, repo_ids), corpus)


def theorem_starts(snapshot, split_kind: str, split: str, repo_ids=None) -> dict:
    """{(repo_id, theorem_id): start} of the theorems of one split, as `examples_from_rows` takes them."""
    theorems = snapshot.theorems(split_kind, split, repo_ids)
    return dict(
        zip(zip(theorems["repo_id"].to_pylist(), theorems["theorem_id"].to_pylist()), theorems["start"].to_pylist())
    )


def examples_from_rows(rows: list[dict], starts: dict, corpus: PremiseCorpus) -> tuple[list[TacticExample], GoldReport]:
    """`build_examples` on plain rows (schema SNAPSHOT_TACTICS) and {(repo_id, theorem_id): start}."""
    report = GoldReport()
    examples = []
    missing_seen: set = set()
    no_start: set = set()
    for row in rows:
        report.tactics += 1
        gold = set()
        names = {(a["def_path"], a["full_name"]) for a in row["annotations"] or () if a and a.get("full_name")}
        report.annotations += len(names)
        for def_path, full_name in sorted(names, key=lambda x: (x[0] or "", x[1])):
            i = corpus.find(row["repo_id"], def_path, full_name)
            if i is None:
                report.missing += 1
                if (def_path, full_name) not in missing_seen and len(report.missing_examples) < 10:
                    report.missing_examples.append(f"{def_path}:{full_name}")
                missing_seen.add((def_path, full_name))
            else:
                gold.add(i)
        report.in_corpus += len(gold)
        if not gold:
            continue
        start = starts.get((row["repo_id"], row["theorem_id"]))
        pos = pos_key(start)
        if pos is None:
            no_start.add((row["repo_id"], row["theorem_id"]))
            pos = -1
        node = corpus.resolve_file(row["repo_id"], row["file_path"])
        report.inaccessible += sum(not corpus.is_accessible(g, node, pos) for g in gold)
        report.tactics_with_gold += 1
        examples.append(
            TacticExample(
                repo_id=row["repo_id"],
                theorem_id=row["theorem_id"],
                file_path=row["file_path"],
                full_name=row["full_name"],
                idx=int(row["idx"]),
                state=row["state_before"],
                node=node,
                pos=pos,
                gold=tuple(sorted(gold)),
            )
        )
    report.theorems_without_start = len(no_start)
    if report.missing:
        logger.warning(
            "%d of %d annotated premises are not in the premise corpus and are ignored (e.g. %s)",
            report.missing,
            report.annotations,
            ", ".join(report.missing_examples[:3]),
        )
    return examples, report
