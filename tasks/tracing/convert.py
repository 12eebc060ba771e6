"""lean-dojo's traced objects -> a LeanDojo Benchmark export (pure functions, then one atomic write).

The records are those LeanDojo's own benchmark script (`generate-benchmark-lean4`) writes,
field for field (layout: docs/architecture.md):

- theorem: {url, commit, file_path, full_name, theorem_statement, start, end, traced_tactics}
- tactic: {tactic, annotated_tactic: [text, [{full_name, def_path, def_pos, def_end_pos}]],
  state_before, state_after}; like LeanDojo, tactics whose state before is "no goals" and
  tactics containing "·" are left out.
- corpus.jsonl line: {path, imports, premises: [{full_name, code, start, end, kind}]}, files
  in dependency order (a file after everything it imports).
- traced_files.jsonl line: {traced_file_path}.
- metadata.json: {creation_time, from_repo: {url, commit}, leandojo_version, lean_version},
  plus Dojoflow's keys (`dojoflow_splits: "unassigned"`, `dojoflow_source`, `commit_time`,
  `dependencies`, `toolchain`, counts).

Every theorem goes to random/train.json and novel_premises/train.json (val and test are
empty): the store assigns splits itself when metadata says `dojoflow_splits: "unassigned"`.

Theorems of dependencies (std, mathlib, ... under .lake/packages) keep their own url and
commit, as in LeanDojo's exports; their `file_path` is the path in the traced tree
(`.lake/packages/<name>/...`), the same path corpus.jsonl and `def_path` use, so a
theorem's file is always found in the corpus. Theorems of Lean 4 itself are left out
(as LeanDojo's script does); its files stay in the corpus, for their premises.

Duck typing: only these attributes of lean-dojo 4.20.0's classes are touched, so tests
build small objects with the same attributes.
  TracedRepo: repo, dependencies, traced_files, traced_files_graph, get_traced_theorems()
  traced_files_graph (networkx.DiGraph): nodes, nodes[path]["traced_file"], successors(path)
  LeanGitRepo: url, commit, lean_version
  TracedFile: path, get_premise_definitions()
  TracedTheorem: theorem (repo, file_path, full_name), traced_file, start, end,
    get_traced_tactics(), has_tactic_proof(), get_tactic_proof(), get_theorem_statement()
  TracedTactic: tactic, state_before, state_after, get_annotated_tactic()
  Pos: iterates as (line, column)
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path, PurePath

from storage import atomic
from storage.tactic_text import is_finished

LEAN4_URL = "https://github.com/leanprover/lean4"  # lean_dojo.constants.LEAN4_URL
SPLIT_KINDS = ("random", "novel_premises")
SPLITS = ("train", "val", "test")


@dataclass
class LeanDojoExport:
    """The content of one export folder, before it is written."""

    theorems: list[dict]
    corpus: list[dict]
    traced_files: list[dict]
    metadata: dict
    warnings: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        return {
            "theorems": len(self.theorems),
            "tactics": sum(len(t["traced_tactics"]) for t in self.theorems),
            "files": len(self.corpus),
            "premises": sum(len(c["premises"]) for c in self.corpus),
        }


def _path(p) -> str:
    return PurePath(p).as_posix() if isinstance(p, PurePath) else str(p)


def _pos(p) -> list[int]:
    return [int(x) for x in p]


def keep_tactic(tactic) -> bool:
    """LeanDojo's rule: drop steps taken with no goals left, and bullets ("·")."""
    return not is_finished(tactic.state_before) and "·" not in tactic.tactic


def tactic_record(tactic) -> dict:
    text, provenances = tactic.get_annotated_tactic()
    return {
        "tactic": tactic.tactic,
        "annotated_tactic": [
            text,
            [
                {
                    "full_name": p["full_name"],
                    "def_path": _path(p["def_path"]),
                    "def_pos": _pos(p["def_pos"]),
                    "def_end_pos": _pos(p["def_end_pos"]),
                }
                for p in provenances
            ],
        ],
        "state_before": tactic.state_before,
        "state_after": tactic.state_after,
    }


def theorem_statement(theorem, warnings: list[str] | None = None) -> str | None:
    """The statement, for theorems with a tactic proof (as LeanAgent's exporter); else None.

    lean-dojo's source slicing asserts on some code (e.g. "--" inside a string); such a
    statement becomes None, with a warning, rather than costing the whole trace.
    """
    try:
        if theorem.has_tactic_proof() and theorem.get_tactic_proof() is not None:
            return theorem.get_theorem_statement()
    except (AssertionError, ValueError, IndexError) as e:
        if warnings is not None:
            warnings.append(
                f"{_path(theorem.theorem.file_path)}: {theorem.theorem.full_name}: "
                f"no theorem_statement ({type(e).__name__}: {e})"
            )
    return None


def is_same_repo(a, b) -> bool:
    return a is b or (a.url == b.url and a.commit == b.commit)


def theorem_record(theorem, main_repo, url: str, commit: str, warnings: list[str] | None = None) -> dict:
    """One theorem. `main_repo` is the traced repo's LeanGitRepo; its theorems get
    `url`/`commit` (lean-dojo's own url for it is a path in its cache)."""
    repo = theorem.theorem.repo
    if is_same_repo(repo, main_repo):
        t_url, t_commit = url, commit
    else:
        t_url, t_commit = repo.url, repo.commit
    traced_file = theorem.traced_file
    file_path = _path(traced_file.path if traced_file is not None else theorem.theorem.file_path)
    return {
        "url": t_url,
        "commit": t_commit,
        "file_path": file_path,
        "full_name": theorem.theorem.full_name,
        "theorem_statement": theorem_statement(theorem, warnings),
        "start": _pos(theorem.start),
        "end": _pos(theorem.end),
        "traced_tactics": [tactic_record(t) for t in theorem.get_traced_tactics() if keep_tactic(t)],
    }


def theorem_records(
    traced_repo, url: str, commit: str, include_lean4: bool = False, warnings: list[str] | None = None
) -> list[dict]:
    """All theorems, sorted (traced repo first, then by url, file and position) so that
    the same trace always gives the same bytes. Duplicated identities keep the first."""
    warnings = [] if warnings is None else warnings
    main = traced_repo.repo
    records, seen = [], set()
    for thm in traced_repo.get_traced_theorems():
        if not include_lean4 and thm.theorem.repo.url == LEAN4_URL:
            continue
        try:
            rec = theorem_record(thm, main, url, commit, warnings)
        except (AssertionError, ValueError, IndexError) as e:
            # lean-dojo asserts on some sources while slicing tactics; one such theorem
            # must not cost a trace of hours.
            warnings.append(
                f"{_path(thm.theorem.file_path)}: {thm.theorem.full_name}: skipped ({type(e).__name__}: {e})"
            )
            continue
        key = (rec["url"], rec["commit"], rec["file_path"], rec["full_name"])
        if key in seen:
            warnings.append(f"{rec['file_path']}: {rec['full_name']}: a second theorem with this name was left out")
            continue
        seen.add(key)
        records.append(rec)
    records.sort(key=lambda r: (r["url"] != url, r["url"], r["file_path"], r["start"], r["full_name"]))
    return records


def dependency_order(graph) -> list[str]:
    """Nodes of an import graph (edge X -> Y: X imports Y), every file after its imports.

    Deterministic (ties broken by path), unlike networkx's topological sort; raises on a cycle.
    """
    order: list[str] = []
    state: dict[str, int] = {}  # 1: on the stack, 2: done
    for root in sorted(str(n) for n in graph.nodes):
        if state.get(root) == 2:
            continue
        stack = [(root, iter(sorted(str(s) for s in graph.successors(root))))]
        state[root] = 1
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                stack.pop()
                state[node] = 2
                order.append(node)
            elif state.get(child) == 1:
                raise ValueError(f"import cycle through {child}")
            elif child not in state:
                state[child] = 1
                stack.append((child, iter(sorted(str(s) for s in graph.successors(child)))))
    return order


def premise_record(p: dict) -> dict:
    return {
        "full_name": p["full_name"],
        "code": p["code"],
        "start": _pos(p["start"]),
        "end": _pos(p["end"]),
        "kind": p["kind"],
    }


def corpus_records(traced_repo) -> list[dict]:
    graph = traced_repo.traced_files_graph
    if graph is None:
        raise ValueError(
            "the traced repo has no file graph (it was traced with build_deps=False); "
            "trace it with build_deps=True to export its corpus"
        )
    out = []
    for node in dependency_order(graph):
        tf = graph.nodes[node]["traced_file"]
        out.append(
            {
                "path": _path(tf.path),
                "imports": sorted(str(s) for s in graph.successors(node)),
                "premises": [premise_record(p) for p in tf.get_premise_definitions()],
            }
        )
    return out


def traced_file_records(traced_repo) -> list[dict]:
    paths = sorted({_path(tf.path) for tf in traced_repo.traced_files})
    return [{"traced_file_path": p} for p in paths]


def dependency_records(traced_repo) -> list[dict]:
    return [
        {"name": name, "url": dep.url, "commit": dep.commit, "lean_version": getattr(dep, "lean_version", None)}
        for name, dep in sorted(traced_repo.dependencies.items())
    ]


def metadata_record(
    traced_repo,
    *,
    url: str,
    commit: str,
    leandojo_version: str,
    lean_version: str | None,
    counts: dict,
    commit_time: str | None = None,
    toolchain: dict | None = None,
    warnings: list[str] | None = None,
    creation_time: str | None = None,
) -> dict:
    meta = {
        "creation_time": creation_time or str(datetime.now()),
        "from_repo": {"url": url, "commit": commit},
        "leandojo_version": leandojo_version,
        "lean_version": lean_version,
        "dojoflow_splits": "unassigned",
        "dojoflow_source": "lean_dojo_trace",
        "commit_time": commit_time,
        "dependencies": dependency_records(traced_repo),
        "toolchain": toolchain,
        **{f"num_{k}": v for k, v in counts.items()},
    }
    if warnings:
        meta["dojoflow_warnings"] = {"count": len(warnings), "first": warnings[:50]}
    return meta


def build_export(
    traced_repo,
    *,
    url: str,
    commit: str,
    leandojo_version: str,
    lean_version: str | None = None,
    commit_time: str | None = None,
    toolchain: dict | None = None,
    include_lean4_theorems: bool = False,
    creation_time: str | None = None,
) -> LeanDojoExport:
    """Everything an export folder holds, from a lean-dojo TracedRepo.

    `url` and `commit` name the traced repository as the user gave it (lean-dojo's own
    url for it is a path in its cache). `lean_version` defaults to the repo's.
    """
    warnings: list[str] = []
    theorems = theorem_records(traced_repo, url, commit, include_lean4_theorems, warnings)
    export = LeanDojoExport(
        theorems=theorems,
        corpus=corpus_records(traced_repo),
        traced_files=traced_file_records(traced_repo),
        metadata={},
        warnings=warnings,
    )
    if lean_version is None:
        lean_version = getattr(traced_repo.repo, "lean_version", None)
    export.metadata = metadata_record(
        traced_repo,
        url=url,
        commit=commit,
        leandojo_version=leandojo_version,
        lean_version=lean_version,
        counts=export.counts(),
        commit_time=commit_time,
        toolchain=toolchain,
        warnings=warnings,
        creation_time=creation_time,
    )
    return export


def _jsonl(records: list[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


def write_export(export: LeanDojoExport, folder: Path) -> Path:
    """Write the export folder atomically: all of it appears at `folder`, or nothing does.

    An existing folder at `folder` is replaced (storage.atomic.atomic_path).
    """
    folder = Path(folder)
    train = json.dumps(export.theorems, ensure_ascii=False)
    with atomic.atomic_path(folder) as tmp:
        tmp.mkdir()
        for kind in SPLIT_KINDS:
            (tmp / kind).mkdir()
            atomic.write_text(tmp / kind / "train.json", train)
            atomic.write_text(tmp / kind / "val.json", "[]")
            atomic.write_text(tmp / kind / "test.json", "[]")
        atomic.write_text(tmp / "corpus.jsonl", _jsonl(export.corpus))
        atomic.write_text(tmp / "traced_files.jsonl", _jsonl(export.traced_files))
        # metadata.json last: a folder with it is a finished export.
        atomic.write_text(tmp / "metadata.json", json.dumps(export.metadata, indent=2, ensure_ascii=False) + "\n")
    return folder
