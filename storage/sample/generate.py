"""Write Dojoflow's sample data: three small Lean 4 repositories and their LeanDojo exports.

This is the data `dojoflow run` trains on by default, with no network and no Lean
toolchain. The three repositories differ in difficulty so that the curriculum has
something to order:

- `NatBasics` (easy): arithmetic on `Nat`, mostly one- and two-step proofs;
- `ListLemmas` (medium): lists, proofs by induction of three to six steps;
- `LogicPuzzles` (hard): logic and knights-and-knaves puzzles, four to nine steps,
  several goals at once, the most `sorry`s.

Their content is described once, in `storage/sample/content/`, and this script
renders both forms from that description, so they agree:

- `storage/sample/lean/<Repo>/`: `lakefile.lean`, `lean-toolchain` and the `.lean`
  files (Lean 4 core only, no Mathlib), which a user with a toolchain can trace;
- `storage/sample/leandojo/<Repo>/`: the traced form in the LeanDojo Benchmark
  layout (`random/` and `novel_premises/` splits, `corpus.jsonl`,
  `traced_files.jsonl`, `metadata.json`), with url
  `https://dojoflow.invalid/samples/<Repo>` (the reserved `.invalid` domain: these
  are not fetchable) and, as commit, the sha1 of the repository's sources.

Goal states are written by hand to look like Lean 4's (hypotheses, `⊢`, `case`
tags, blank lines between goals); no Lean ran to produce them. Positions of Lean
core premises (`CORE_PREMISES`) are illustrative: they name the right file of the
toolchain, not an exact line of v4.20.0. Each export's corpus.jsonl lists the core
files its annotations cite (first, each after the core files it imports), holding the
cited premises at those positions, so that ReProver's and LeanDojo-v2's loaders find
every annotation's file (`Corpus.locate_premise` raises KeyError for a file the corpus
lacks). Their `code` is only the declaration's kind and name, and their imports are
illustrative too: the sources of Lean core are not part of the sample.

The output is deterministic (splits use a fixed seed): running this twice gives
byte-identical files, and a test checks the shipped files against a fresh run.

Regenerate after changing the content:

    .venv/bin/python -m storage.sample.generate

or write elsewhere: `.venv/bin/python -m storage.sample.generate --out /tmp/sample`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from storage import atomic
from storage.sample.content import list_lemmas, logic_puzzles, nat_basics
from storage.sample.lean_model import (
    CorePremise,
    LeanRepo,
    Placed,
    RenderedFile,
    Scope,
    Theorem,
    render_file,
    render_lakefile,
    trace_theorem,
)

LEAN_TOOLCHAIN = "leanprover/lean4:v4.20.0"
LEANDOJO_VERSION = "4.20.0"
CREATION_TIME = "2026-01-01 00:00:00.000000"  # fixed, so that regenerating changes nothing
URL_PREFIX = "https://dojoflow.invalid/samples/"
SEED = 3407  # the seed of LeanDojo's benchmark scripts
VAL_FRACTION = TEST_FRACTION = 0.1

_CORE = ".lake/packages/lean4/src/lean/Init/"
CORE_PREMISES: dict[str, CorePremise] = {
    name: CorePremise(_CORE + path, (line, 1), (line + span, end_col))
    for name, path, line, span, end_col in [
        ("absurd", "Prelude.lean", 172, 1, 16),
        ("congrArg", "Prelude.lean", 305, 2, 14),
        ("Or.inl", "Prelude.lean", 561, 0, 26),
        ("Or.inr", "Prelude.lean", 563, 0, 26),
        ("Nat.le_refl", "Prelude.lean", 1430, 1, 20),
        ("Nat.le_trans", "Prelude.lean", 1456, 3, 22),
        ("Nat.lt_irrefl", "Prelude.lean", 1489, 1, 31),
        ("Nat.zero_le", "Prelude.lean", 1402, 2, 30),
        ("Nat.le_antisymm", "Prelude.lean", 1520, 8, 41),
        ("Iff.rfl", "Core.lean", 118, 1, 20),
        ("Nat.add_comm", "Data/Nat/Basic.lean", 141, 5, 20),
        ("Nat.add_assoc", "Data/Nat/Basic.lean", 147, 2, 53),
        ("Nat.add_left_comm", "Data/Nat/Basic.lean", 151, 1, 57),
        ("Nat.add_right_comm", "Data/Nat/Basic.lean", 154, 1, 57),
        ("Nat.mul_comm", "Data/Nat/Basic.lean", 192, 2, 93),
        ("Nat.mul_add", "Data/Nat/Basic.lean", 210, 1, 23),
        ("Nat.add_mul", "Data/Nat/Basic.lean", 213, 1, 24),
        ("Nat.mul_assoc", "Data/Nat/Basic.lean", 216, 2, 73),
        ("Nat.mul_left_comm", "Data/Nat/Basic.lean", 220, 1, 55),
        ("Nat.one_mul", "Data/Nat/Basic.lean", 201, 1, 31),
        ("Nat.le_add_right", "Data/Nat/Basic.lean", 330, 2, 46),
        ("Nat.sub_le", "Data/Nat/Basic.lean", 249, 3, 58),
        ("Nat.mul_le_mul_left", "Data/Nat/Basic.lean", 498, 4, 25),
        ("List.cons_append", "Data/List/Basic.lean", 118, 0, 79),
        ("List.length_cons", "Data/List/Basic.lean", 64, 0, 80),
        ("List.replicate", "Data/List/Basic.lean", 352, 3, 38),
        ("List.map", "Data/List/Basic.lean", 417, 3, 36),
        ("List.length_append", "Data/List/Basic.lean", 131, 3, 59),
        ("List.append_cancel_left", "Data/List/Lemmas.lean", 1712, 2, 41),
        ("List.length_map", "Data/List/Lemmas.lean", 905, 2, 54),
        ("List.mem_map", "Data/List/Lemmas.lean", 930, 3, 36),
        ("List.length_reverse", "Data/List/Lemmas.lean", 2644, 3, 47),
        ("List.mem_reverse", "Data/List/Lemmas.lean", 2660, 1, 45),
    ]
}

# Illustrative imports among the cited core files (real Init files import more).
CORE_IMPORTS = {
    "Prelude.lean": [],
    "Core.lean": ["Prelude.lean"],
    "Data/Nat/Basic.lean": ["Core.lean"],
    "Data/List/Basic.lean": ["Data/Nat/Basic.lean"],
    "Data/List/Lemmas.lean": ["Data/List/Basic.lean"],
}
CORE_KINDS = {"List.map": "def", "List.replicate": "def", "Or.inl": "ctor", "Or.inr": "ctor"}

# In an order that is not the curriculum order (NatBasics, the easiest, comes last).
REPOS: tuple[LeanRepo, ...] = tuple(
    sorted((nat_basics.repo(), list_lemmas.repo(), logic_puzzles.repo()), key=lambda r: r.name)
)


@dataclass(frozen=True)
class RepoSummary:
    name: str
    url: str
    commit: str
    files: int
    theorems: int
    tactics: int
    sorry_theorems: int
    term_mode_theorems: int


# -- building one repository ---------------------------------------------------------------
def _sources(repo: LeanRepo) -> tuple[dict[str, str], list[RenderedFile]]:
    """{path: text} of the repository's files, and the rendered `.lean` files."""
    rendered = [render_file(f) for f in repo.files]
    sources = {"lakefile.lean": render_lakefile(repo), "lean-toolchain": LEAN_TOOLCHAIN + "\n"}
    for r in rendered:
        sources[r.file.path] = r.text
    return sources, rendered


def source_commit(sources: dict[str, str]) -> str:
    """sha1 of the sources (paths and contents, in path order): stable and content-derived."""
    h = hashlib.sha1()
    for path in sorted(sources):
        h.update(path.encode() + b"\0" + sources[path].encode("utf-8") + b"\0")
    return h.hexdigest()


def _theorem_statement(t: Theorem, full_name: str) -> str | None:
    """Most records carry the statement; about one in twelve is null, as in real exports."""
    return None if int(hashlib.sha1(full_name.encode()).hexdigest(), 16) % 12 == 0 else t.header


def _trace_repo(repo: LeanRepo, rendered: list[RenderedFile], url: str, commit: str):
    """(theorem records in source order, corpus lines)."""
    by_module = {r.file.module: r for r in rendered}
    premises: dict[str, Placed] = {}
    constructors: set[str] = set()
    for r in rendered:
        for p in r.placed:
            if p.full_name in premises:
                raise ValueError(f"{repo.name}: {p.full_name} is declared twice")
            premises[p.full_name] = p
            constructors.update(f"{p.full_name}.{c}" for c in getattr(p.item, "constructors", ()))

    def imported(module: str, seen: set[str]) -> set[str]:
        for m in by_module[module].file.imports:
            if m not in by_module:
                raise ValueError(f"{repo.name}: {module} imports {m}, which is not in the repository")
            if m not in seen:
                seen.add(m)
                imported(m, seen)
        return seen

    records, corpus = [], []
    for r in rendered:
        f = r.file
        visible = {p.full_name: p for m in imported(f.module, set()) for p in by_module[m].placed}
        for p in r.placed:
            if isinstance(p.item, Theorem):
                scope = Scope(f.namespace, dict(visible), premises, constructors, CORE_PREMISES)
                where = f"{repo.name} {f.path} {p.full_name}"
                records.append(
                    {
                        "url": url,
                        "commit": commit,
                        "file_path": f.path,
                        "full_name": p.full_name,
                        "theorem_statement": _theorem_statement(p.item, p.full_name),
                        "start": list(p.start),
                        "end": list(p.end),
                        "traced_tactics": trace_theorem(p.item, scope, where),
                    }
                )
            visible[p.full_name] = p
        corpus.append(
            {
                "path": f.path,
                "imports": [by_module[m].file.path for m in f.imports],
                "premises": [
                    {
                        "full_name": p.full_name,
                        "code": p.code,
                        "start": list(p.start),
                        "end": list(p.end),
                        "kind": p.kind,
                    }
                    for p in r.placed
                ],
            }
        )
    return records, corpus


def core_corpus(records: list[dict]) -> list[dict]:
    """Corpus lines of the Lean core files that `records`' annotations cite, and the core
    files they import, each after its imports; each holds every premise of
    CORE_PREMISES in it, so that a file's line is the same in every export."""
    cited: dict[str, set[str]] = defaultdict(set)
    for r in records:
        for t in r["traced_tactics"]:
            for a in t["annotated_tactic"][1]:
                if a["full_name"] in CORE_PREMISES:
                    cited[a["def_path"][len(_CORE) :]].add(a["full_name"])
    needed: list[str] = []

    def visit(rel: str) -> None:
        if rel not in needed:
            for dep in CORE_IMPORTS[rel]:
                visit(dep)
            needed.append(rel)

    for rel in sorted(cited):
        visit(rel)
    in_file: dict[str, list[str]] = defaultdict(list)  # every sample core premise of the file:
    for name, core in CORE_PREMISES.items():  # the same lines in every export (merged exports list a path once)
        in_file[core.def_path[len(_CORE) :]].append(name)
    return [
        {
            "path": _CORE + rel,
            "imports": [_CORE + d for d in CORE_IMPORTS[rel]],
            "premises": [
                {
                    "full_name": name,
                    "code": f"{CORE_KINDS.get(name, 'theorem')} {name}",
                    "start": list(CORE_PREMISES[name].def_pos),
                    "end": list(CORE_PREMISES[name].def_end_pos),
                    "kind": CORE_KINDS.get(name, "theorem"),
                }
                for name in sorted(in_file[rel], key=lambda n: CORE_PREMISES[n].def_pos)
            ],
        }
        for rel in needed
    ]


# -- splits (LeanDojo's rules) ------------------------------------------------------------------
def _counts(n: int) -> tuple[int, int]:
    return round(n * VAL_FRACTION), round(n * TEST_FRACTION)


def split_random(records: list[dict]) -> dict[str, list[dict]]:
    """A seeded shuffle; the first tenth is val, the next tenth test, the rest train."""
    num_val, num_test = _counts(len(records))
    shuffled = list(records)
    random.Random(SEED).shuffle(shuffled)
    return {
        "train": shuffled[num_val + num_test :],
        "val": shuffled[:num_val],
        "test": shuffled[num_val : num_val + num_test],
    }


def premises_used(record: dict) -> list[str]:
    """Full names of the premises a theorem's tactics mention, first mention first."""
    seen: dict[str, None] = {}
    for t in record["traced_tactics"]:
        for a in t["annotated_tactic"][1]:
            seen.setdefault(a["full_name"], None)
    return list(seen)


def split_novel_premises(records: list[dict]) -> dict[str, list[dict]]:
    """LeanDojo's rule: premises sorted by how many theorems use them, fewest first; every
    theorem using the next premise joins val+test until val+test reach their target size;
    the rest is train. Val+test is then shuffled (seeded) and cut into val and test."""
    num_val, num_test = _counts(len(records))
    users: dict[str, list[int]] = defaultdict(list)
    for i, rec in enumerate(records):
        for name in premises_used(rec):
            users[name].append(i)
    chosen: dict[int, None] = {}
    for _, idxs in sorted(users.items(), key=lambda kv: len(kv[1])):  # stable: first use breaks ties
        if len(chosen) >= num_val + num_test:
            break
        for i in idxs:
            chosen.setdefault(i, None)
    held_out = [records[i] for i in chosen]
    random.Random(SEED).shuffle(held_out)
    return {
        "train": [r for i, r in enumerate(records) if i not in chosen],
        "val": held_out[:num_val],
        "test": held_out[num_val:],
    }


# -- writing ---------------------------------------------------------------------------------------
def _json(obj) -> str:
    return json.dumps(obj, ensure_ascii=False, indent=2) + "\n"


def _jsonl(rows: list[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def build(repo: LeanRepo) -> tuple[dict[str, str], dict[str, str], RepoSummary]:
    """({path: text} of the Lean sources, {path: text} of the LeanDojo export, summary)."""
    sources, rendered = _sources(repo)
    url, commit = URL_PREFIX + repo.name, source_commit(sources)
    records, corpus = _trace_repo(repo, rendered, url, commit)
    export = {
        "metadata.json": _json(
            {
                "creation_time": CREATION_TIME,
                "from_repo": {"url": url, "commit": commit},
                "leandojo_version": LEANDOJO_VERSION,
            }
        ),
        "corpus.jsonl": _jsonl(core_corpus(records) + corpus),
        "traced_files.jsonl": _jsonl([{"traced_file_path": r.file.path} for r in rendered]),
    }
    for kind, split in (("random", split_random), ("novel_premises", split_novel_premises)):
        for name, part in split(records).items():
            export[f"{kind}/{name}.json"] = _json(part)
    summary = RepoSummary(
        name=repo.name,
        url=url,
        commit=commit,
        files=len(rendered),
        theorems=len(records),
        tactics=sum(len(r["traced_tactics"]) for r in records),
        sorry_theorems=sum(any(t["tactic"] == "sorry" for t in r["traced_tactics"]) for r in records),
        term_mode_theorems=sum(not r["traced_tactics"] for r in records),
    )
    return sources, export, summary


def _write_tree(folder: Path, files: dict[str, dict[str, str]]) -> None:
    """Replace `folder` with {subfolder: {path: text}} in one rename: no reader sees a mix."""
    with atomic.atomic_path(folder) as tmp:
        tmp.mkdir(parents=True)
        for sub, texts in files.items():
            for rel, text in texts.items():
                atomic.write_text(tmp / sub / rel, text)


def generate(out: Path | None = None) -> list[RepoSummary]:
    """Write `lean/` and `leandojo/` under `out` (default: this package's folder)."""
    root = Path(out) if out is not None else Path(__file__).resolve().parent
    lean, leandojo, summaries = {}, {}, []
    for repo in REPOS:
        sources, export, summary = build(repo)
        lean[repo.name], leandojo[repo.name] = sources, export
        summaries.append(summary)
    _write_tree(root / "lean", lean)
    _write_tree(root / "leandojo", leandojo)
    return summaries


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--out", type=Path, default=None, help="folder to write lean/ and leandojo/ into (default: storage/sample/)"
    )
    args = parser.parse_args(argv)
    summaries = generate(args.out)
    for s in summaries:
        print(
            f"{s.name:13} {s.theorems:4} theorems {s.tactics:4} tactics {s.sorry_theorems:2} sorry "
            f"{s.term_mode_theorems:3} term-mode  commit {s.commit[:12]}"
        )
    print(f"{'total':13} {sum(s.theorems for s in summaries):4} theorems {sum(s.tactics for s in summaries):4} tactics")


if __name__ == "__main__":
    main()
