"""corpus.jsonl and traced_files.jsonl: the export's files and premises, each assigned to
the repository that owns it (the traced repository or a dependency such as mathlib)."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path

from ..errors import InputError
from ..ids import repo_name
from ..lean_text import control_problem
from . import fields
from .files import load_jsonl, present, read_bytes
from .records import PREMISE_KEYS, Theorem, TheoremKey

_PACKAGE_RE = re.compile(r"^(?:\.lake/packages|lake-packages)/([^/]+)/")
Repo = tuple[str, str]  # (url, commit)


class Owners:
    """Which repository owns a file path: the one whose theorems live in it, else the
    package folder it sits in (`.lake/packages/NAME/`), else the export's main repository."""

    def __init__(self, theorems: dict[TheoremKey, Theorem], repos: list[Repo], main: Repo):
        self.main = main
        self.of_file: dict[str, Repo] = {}
        for key in theorems:
            self.of_file.setdefault(key.file_path, key.repo)
        self.of_package = {repo_name(r[0]).lower(): r for r in repos}
        for key in theorems:
            m = _PACKAGE_RE.match(key.file_path)
            if m:
                self.of_package[m.group(1).lower()] = key.repo

    def __call__(self, path: str) -> Repo:
        if path in self.of_file:
            return self.of_file[path]
        m = _PACKAGE_RE.match(path)
        if m and m.group(1).lower() in self.of_package:
            return self.of_package[m.group(1).lower()]
        return self.main

    def knows(self, path: str) -> bool:
        """True when the path's owner comes from the export itself, not the fallback."""
        return path in self.of_file or bool(_PACKAGE_RE.match(path))


class FilesAndPremises:
    """Each repository's files and premises, as rows of the FILES and PREMISES tables."""

    def __init__(self):
        self.files: dict[Repo, list[dict]] = defaultdict(list)
        self.premises: dict[Repo, list[dict]] = defaultdict(list)
        self.seen: set[str] = set()

    def add_file(self, repo: Repo, path: str, imports: list, order: int | None, traced: bool) -> None:
        self.files[repo].append({"path": path, "imports": imports, "corpus_order": order, "traced": traced})
        self.seen.add(path)


def read_traced(root: Path) -> set[str]:
    """The paths traced_files.jsonl lists (none when it is absent)."""
    path = root / "traced_files.jsonl"
    if not present(path):
        return set()
    out = set()
    for i, rec in enumerate(load_jsonl(path, read_bytes(path, root))):
        where = f"line {i + 1}"
        out.add(fields.check_relative_path(fields.need(rec, "traced_file_path", str, path, where), path, where))
    return out


def read_corpus(root: Path, owner: Owners, traced: set[str], theorems: dict) -> FilesAndPremises:
    """Files and premises of corpus.jsonl (or, without one, the premises that tactics
    mention), then the traced files and theorem files the corpus does not list."""
    out = FilesAndPremises()
    path = root / "corpus.jsonl"
    has_corpus = present(path)
    if has_corpus:
        for i, rec in enumerate(load_jsonl(path, read_bytes(path, root))):
            corpus_line(rec, i, path, owner, traced, out)
    for p in sorted(traced - out.seen):
        out.add_file(owner(p), p, [], None, True)
    for key in theorems:
        if key.file_path not in out.seen:
            out.add_file(key.repo, key.file_path, [], None, False)
    if not has_corpus:
        premises_from_annotations(theorems, owner, out)
    return out


def corpus_line(rec, i: int, source: Path, owner: Owners, traced: set[str], out: FilesAndPremises) -> None:
    where = f"line {i + 1}"
    path = fields.check_relative_path(fields.need(rec, "path", str, source, where), source, where)
    imports = fields.need(rec, "imports", list, source, where)
    for j, imp in enumerate(imports):
        w = f"{where}, import {j}"
        if not isinstance(imp, str):
            raise InputError(
                source,
                f"field `imports` should hold strings, found {json.dumps(imp)[:80]}",
                "fix the record or re-create the export",
                where=w,
            )
        fields.check_relative_path(imp, source, w)
    if path in out.seen:
        raise InputError(source, f"file {path} appears twice", "remove the duplicate line", where=where)
    repo = owner(path)
    out.add_file(repo, path, list(imports), i, path in traced)
    for j, p in enumerate(fields.need(rec, "premises", list, source, where)):
        out.premises[repo].append(_premise(p, j, path, source, f"{where}, premise {j}"))


def _premise(p, j: int, path: str, source: Path, where: str) -> dict:
    start, end = (
        fields.span(p, "start", "end", source, where, nullable=True, optional=True)
        if isinstance(p, dict)
        else (None, None)
    )
    full_name = fields.need(p, "full_name", str, source, where)
    problem = control_problem(full_name)
    if problem:
        raise InputError(source, f"field `full_name` {problem}", "fix the record or re-create the export", where=where)
    return {
        "file_path": path,
        "full_name": full_name,
        "code": fields.need(p, "code", str, source, where, nullable=True) if "code" in p else None,
        "kind": fields.need(p, "kind", str, source, where, nullable=True) if "kind" in p else None,
        "start": start,
        "end": end,
        "idx": j,
        "from_annotation": False,
        "extra": fields.extra(p, PREMISE_KEYS, optional=("code", "kind", "start", "end")),
    }


def premises_from_annotations(theorems: dict, owner: Owners, out: FilesAndPremises) -> None:
    """No corpus.jsonl: keep the premises that tactics mention, from their annotations."""
    known = set()
    for key, thm in theorems.items():
        for t in thm.traced_tactics:
            for a in t.annotated_tactic[1]:
                if (a.def_path, a.full_name) in known:
                    continue
                known.add((a.def_path, a.full_name))
                repo = owner(a.def_path) if owner.knows(a.def_path) else key.repo
                out.premises[repo].append(
                    {
                        "file_path": a.def_path,
                        "full_name": a.full_name,
                        "code": None,
                        "kind": None,
                        "start": a.def_pos,
                        "end": a.def_end_pos,
                        "idx": len(out.premises[repo]),
                        "from_annotation": True,
                        "extra": None,
                    }
                )
