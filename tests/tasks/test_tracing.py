"""Tracing: lean-dojo objects -> LeanDojo export, the export folder, toolchain checks, input checks.

No Lean toolchain exists here, so nothing in this file runs Lean or lean-dojo. Traced repos are
objects the tests build with the attributes of lean-dojo 4.20.0's classes (`Built*` below);
`lake`, `lean` and the `lean_dojo` package are test doubles where a test says so in its name.

    HF_HUB_OFFLINE=1 .venv/bin/python -m pytest tests/tasks/test_tracing.py -q
"""

from __future__ import annotations

import json
import os
import random
import shutil
import stat
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import networkx as nx
import psutil
import pytest

from storage.errors import InputError, ToolchainMissingError
from tasks.tracing import (
    LeanDojoMissingError,
    ToolchainError,
    TracingError,
    build_export,
    find_toolchain,
    trace_repository,
    write_export,
)
from tasks.tracing.convert import LEAN4_URL, dependency_order
from tests.doubles.tracing_lake import write_lake

ALPHA_SHA = "a1" * 20
STD_SHA = "5d" * 20
LEAN4_SHA = "4e" * 20
EXPORT_URL = "https://github.com/example/alpha"
STD_URL = "https://github.com/leanprover/std4"

L = ".lake/packages/lean4/src/lean/Init/Core.lean"
S = ".lake/packages/std/Std/Logic.lean"
B = "Alpha/Basic.lean"
M = "Alpha/Lemmas.lean"
R = "Alpha.lean"


# -- traced objects built by the tests (the attributes of lean-dojo 4.20.0's classes) ---------
@dataclass(frozen=True)
class BuiltPos:
    """lean_dojo.Pos: iterates as (line, column)."""

    line_nb: int
    column_nb: int

    def __iter__(self):
        yield self.line_nb
        yield self.column_nb


@dataclass
class BuiltRepo:
    """lean_dojo.LeanGitRepo: url, commit, lean_version."""

    url: str
    commit: str
    lean_version: str = "v4.9.0"


@dataclass
class BuiltTheorem:
    """lean_dojo.Theorem: repo, file_path (relative to that repo), full_name."""

    repo: object
    file_path: Path
    full_name: str


@dataclass
class BuiltTactic:
    """lean_dojo.TracedTactic."""

    tactic: str
    state_before: str
    state_after: str
    annotated: tuple

    def get_annotated_tactic(self):
        return self.annotated


@dataclass
class BuiltTracedTheorem:
    """lean_dojo.TracedTheorem."""

    theorem: BuiltTheorem
    start: BuiltPos
    end: BuiltPos
    tactics: list = field(default_factory=list)
    statement: str | None = None
    tactic_proof: str | None = None
    traced_file: object = None
    statement_error: Exception | None = None

    def get_traced_tactics(self, atomic_only: bool = False):
        return list(self.tactics)

    def has_tactic_proof(self) -> bool:
        return self.tactic_proof is not None

    def get_tactic_proof(self):
        return self.tactic_proof

    def get_theorem_statement(self) -> str:
        if self.statement_error is not None:
            raise self.statement_error
        return self.statement


@dataclass
class BuiltTracedFile:
    """lean_dojo.TracedFile: path (in the traced tree), premise definitions, theorems."""

    path: Path
    premises: list
    theorems: list = field(default_factory=list)

    def get_premise_definitions(self):
        return [dict(p) for p in self.premises]

    def get_traced_theorems(self):
        return list(self.theorems)


@dataclass
class BuiltTracedRepo:
    """lean_dojo.TracedRepo."""

    repo: object
    dependencies: dict
    traced_files: list
    traced_files_graph: object

    def get_traced_theorems(self):
        return [t for tf in self.traced_files for t in tf.get_traced_theorems()]


def premise(name, start, end, code, kind="commanddeclaration"):
    return {"full_name": name, "code": code, "start": list(start), "end": list(end), "kind": kind}


def build_sample_traced_repo(main_repo=None, dependencies=None, shuffle_seed: int = 3) -> BuiltTracedRepo:
    """Five files: Lean core, a std file, and three files of repo `alpha` that import them.

    Theorems: one of Lean core (left out of exports), one of std (a dependency), a term-mode
    proof (no tactics), and a tactic proof with annotated premises, a bullet and a step taken
    with no goals (the last two are left out, as LeanDojo does).
    """
    main_repo = main_repo or BuiltRepo(f"/cache/repos/gitpython-alpha-{ALPHA_SHA}/alpha", ALPHA_SHA)
    dependencies = dependencies or {
        "lean4": BuiltRepo(LEAN4_URL, LEAN4_SHA, "latest"),
        "std": BuiltRepo(STD_URL, STD_SHA),
    }
    lean4, std = dependencies["lean4"], dependencies["std"]

    f_core = BuiltTracedFile(
        Path(L), [premise("Nat.add_comm", (10, 1), (12, 30), "theorem Nat.add_comm : ∀ (n m : Nat), n + m = m + n")]
    )
    f_std = BuiltTracedFile(
        Path(S), [premise("Std.and_swap", (3, 1), (4, 20), "theorem Std.and_swap (h : a ∧ b) : b ∧ a")]
    )
    f_basic = BuiltTracedFile(
        Path(B),
        [
            premise("Alpha.double", (3, 1), (3, 30), "def Alpha.double (n : ℕ) : ℕ := n + n", kind="definition"),
            premise("Alpha.double_eq", (5, 1), (5, 50), "theorem Alpha.double_eq (n : ℕ) : Alpha.double n = n + n"),
        ],
    )
    f_lemmas = BuiltTracedFile(
        Path(M),
        [
            premise("Alpha.double_comm", (4, 1), (8, 20), "theorem Alpha.double_comm (n m : ℕ) : n + m = m + n"),
        ],
    )
    f_root = BuiltTracedFile(Path(R), [])

    core_thm = BuiltTracedTheorem(
        BuiltTheorem(lean4, Path("src/lean/Init/Core.lean"), "Nat.add_comm"),
        BuiltPos(10, 1),
        BuiltPos(12, 30),
        tactics=[BuiltTactic("omega", "n m : Nat\n⊢ n + m = m + n", "no goals", ("omega", []))],
        statement="theorem Nat.add_comm : ∀ (n m : Nat), n + m = m + n",
        tactic_proof="by omega",
        traced_file=f_core,
    )
    std_thm = BuiltTracedTheorem(
        BuiltTheorem(std, Path("Std/Logic.lean"), "Std.and_swap"),
        BuiltPos(3, 1),
        BuiltPos(4, 20),
        tactics=[
            BuiltTactic("exact ⟨h.2, h.1⟩", "a b : Prop\nh : a ∧ b\n⊢ b ∧ a", "no goals", ("exact ⟨h.2, h.1⟩", []))
        ],
        statement="theorem Std.and_swap (h : a ∧ b) : b ∧ a",
        tactic_proof="by\n  exact ⟨h.2, h.1⟩",
        traced_file=f_std,
    )
    term_thm = BuiltTracedTheorem(
        BuiltTheorem(main_repo, Path(B), "Alpha.double_eq"),
        BuiltPos(5, 1),
        BuiltPos(5, 50),
        tactics=[],
        statement="theorem Alpha.double_eq (n : ℕ) : Alpha.double n = n + n",
        tactic_proof=None,
        traced_file=f_basic,
    )
    tactic_thm = BuiltTracedTheorem(
        BuiltTheorem(main_repo, Path(M), "Alpha.double_comm"),
        BuiltPos(4, 1),
        BuiltPos(8, 20),
        tactics=[
            BuiltTactic(
                "unfold Alpha.double",
                "n m : ℕ\n⊢ n + m = m + n",
                "n m : ℕ\n⊢ n + m = m + n",
                (
                    "unfold <a>Alpha.double</a>",
                    [{"full_name": "Alpha.double", "def_path": B, "def_pos": [3, 1], "def_end_pos": [3, 30]}],
                ),
            ),
            BuiltTactic("· rfl", "n m : ℕ\n⊢ n = n", "no goals", ("· rfl", [])),
            BuiltTactic("simp", "no goals", "no goals", ("simp", [])),
            BuiltTactic(
                "rw [Nat.add_comm]",
                "n m : ℕ\n⊢ n + m = m + n",
                "no goals",
                (
                    "rw [<a>Nat.add_comm</a>]",
                    [
                        {
                            "full_name": "Nat.add_comm",
                            "def_path": L,
                            "def_pos": BuiltPos(10, 1),
                            "def_end_pos": BuiltPos(12, 30),
                        }
                    ],
                ),
            ),
        ],
        statement="theorem Alpha.double_comm (n m : ℕ) : n + m = m + n",
        tactic_proof="by\n  unfold Alpha.double\n  rw [Nat.add_comm]",
        traced_file=f_lemmas,
    )
    f_core.theorems, f_std.theorems = [core_thm], [std_thm]
    f_basic.theorems, f_lemmas.theorems = [term_thm], [tactic_thm]

    graph = nx.DiGraph()
    files = [f_core, f_std, f_basic, f_lemmas, f_root]
    for tf in files:
        graph.add_node(str(tf.path), traced_file=tf)
    for a, b in [(S, L), (B, L), (B, S), (M, B), (M, L), (R, M), (R, B)]:
        graph.add_edge(a, b)
    shuffled = files[:]
    random.Random(shuffle_seed).shuffle(shuffled)  # lean-dojo's traced_files come in no order
    return BuiltTracedRepo(main_repo, dependencies, shuffled, graph)


def build_export_of_sample(**kw):
    return build_export(
        build_sample_traced_repo(**kw),
        url=EXPORT_URL,
        commit=ALPHA_SHA,
        leandojo_version="4.20.0",
        creation_time="2026-11-01 12:00:00",
    )


# -- conversion ------------------------------------------------------------------------------
def test_convert_built_traced_objects_gives_leandojo_theorem_records():
    export = build_export_of_sample()
    assert export.theorems == [
        {
            "url": EXPORT_URL,
            "commit": ALPHA_SHA,
            "file_path": B,
            "full_name": "Alpha.double_eq",
            "theorem_statement": None,  # term-mode proof
            "start": [5, 1],
            "end": [5, 50],
            "traced_tactics": [],
        },
        {
            "url": EXPORT_URL,
            "commit": ALPHA_SHA,
            "file_path": M,
            "full_name": "Alpha.double_comm",
            "theorem_statement": "theorem Alpha.double_comm (n m : ℕ) : n + m = m + n",
            "start": [4, 1],
            "end": [8, 20],
            "traced_tactics": [
                {
                    "tactic": "unfold Alpha.double",
                    "annotated_tactic": [
                        "unfold <a>Alpha.double</a>",
                        [{"full_name": "Alpha.double", "def_path": B, "def_pos": [3, 1], "def_end_pos": [3, 30]}],
                    ],
                    "state_before": "n m : ℕ\n⊢ n + m = m + n",
                    "state_after": "n m : ℕ\n⊢ n + m = m + n",
                },
                # "· rfl" (a bullet) and "simp" (taken with no goals) are left out, as LeanDojo does
                {
                    "tactic": "rw [Nat.add_comm]",
                    "annotated_tactic": [
                        "rw [<a>Nat.add_comm</a>]",
                        [{"full_name": "Nat.add_comm", "def_path": L, "def_pos": [10, 1], "def_end_pos": [12, 30]}],
                    ],
                    "state_before": "n m : ℕ\n⊢ n + m = m + n",
                    "state_after": "no goals",
                },
            ],
        },
        {
            # a dependency's theorem keeps its own url and commit; its path is the corpus path
            "url": STD_URL,
            "commit": STD_SHA,
            "file_path": S,
            "full_name": "Std.and_swap",
            "theorem_statement": "theorem Std.and_swap (h : a ∧ b) : b ∧ a",
            "start": [3, 1],
            "end": [4, 20],
            "traced_tactics": [
                {
                    "tactic": "exact ⟨h.2, h.1⟩",
                    "annotated_tactic": ["exact ⟨h.2, h.1⟩", []],
                    "state_before": "a b : Prop\nh : a ∧ b\n⊢ b ∧ a",
                    "state_after": "no goals",
                }
            ],
        },
    ]
    # Lean 4's own theorems are left out (LeanDojo's script does the same)
    assert all(t["url"] != LEAN4_URL for t in export.theorems)
    assert all(
        list(t) == ["url", "commit", "file_path", "full_name", "theorem_statement", "start", "end", "traced_tactics"]
        for t in export.theorems
    )


def test_convert_built_traced_objects_corpus_lists_files_after_their_imports():
    export = build_export_of_sample()
    assert [c["path"] for c in export.corpus] == [L, S, B, M, R]
    by_path = {c["path"]: c for c in export.corpus}
    assert by_path[R]["imports"] == [B, M]
    assert by_path[B] == {
        "path": B,
        "imports": [L, S],
        "premises": [
            {
                "full_name": "Alpha.double",
                "code": "def Alpha.double (n : ℕ) : ℕ := n + n",
                "start": [3, 1],
                "end": [3, 30],
                "kind": "definition",
            },
            {
                "full_name": "Alpha.double_eq",
                "code": "theorem Alpha.double_eq (n : ℕ) : Alpha.double n = n + n",
                "start": [5, 1],
                "end": [5, 50],
                "kind": "commanddeclaration",
            },
        ],
    }
    seen = set()
    for c in export.corpus:
        assert set(c["imports"]) <= seen, f"{c['path']} comes before one of its imports"
        seen.add(c["path"])
    assert export.traced_files == [{"traced_file_path": p} for p in sorted([L, S, B, M, R])]


def test_convert_built_traced_objects_is_independent_of_lean_dojo_file_order():
    a, b = (
        build_export_of_sample(),
        build_export(
            build_sample_traced_repo(shuffle_seed=11),
            url=EXPORT_URL,
            commit=ALPHA_SHA,
            leandojo_version="4.20.0",
            creation_time="2026-11-01 12:00:00",
        ),
    )
    assert (a.theorems, a.corpus, a.traced_files, a.metadata) == (b.theorems, b.corpus, b.traced_files, b.metadata)


def test_convert_built_traced_objects_metadata():
    export = build_export(
        build_sample_traced_repo(),
        url=EXPORT_URL,
        commit=ALPHA_SHA,
        leandojo_version="4.20.0",
        commit_time="2026-10-30T08:00:00+00:00",
        toolchain={"lean": {"version": "4.9.0"}},
        creation_time="2026-11-01 12:00:00",
    )
    assert export.metadata == {
        "creation_time": "2026-11-01 12:00:00",
        "from_repo": {"url": EXPORT_URL, "commit": ALPHA_SHA},
        "leandojo_version": "4.20.0",
        "lean_version": "v4.9.0",
        "dojoflow_splits": "unassigned",
        "dojoflow_source": "lean_dojo_trace",
        "commit_time": "2026-10-30T08:00:00+00:00",
        "dependencies": [
            {"name": "lean4", "url": LEAN4_URL, "commit": LEAN4_SHA, "lean_version": "latest"},
            {"name": "std", "url": STD_URL, "commit": STD_SHA, "lean_version": "v4.9.0"},
        ],
        "toolchain": {"lean": {"version": "4.9.0"}},
        "num_theorems": 3,
        "num_tactics": 3,
        "num_files": 5,
        "num_premises": 5,
    }


def test_convert_built_traced_objects_statement_failure_keeps_theorem_with_warning():
    repo = build_sample_traced_repo()
    thm = next(t for t in repo.get_traced_theorems() if t.theorem.full_name == "Alpha.double_comm")
    thm.statement_error = AssertionError("'--' in code")  # what lean-dojo's slicing raises on some files
    export = build_export(repo, url=EXPORT_URL, commit=ALPHA_SHA, leandojo_version="4.20.0")
    rec = next(t for t in export.theorems if t["full_name"] == "Alpha.double_comm")
    assert rec["theorem_statement"] is None and len(rec["traced_tactics"]) == 2
    assert export.metadata["dojoflow_warnings"]["count"] == 1
    assert "Alpha.double_comm" in export.metadata["dojoflow_warnings"]["first"][0]


def test_dependency_order_rejects_an_import_cycle():
    g = nx.DiGraph([("A.lean", "B.lean"), ("B.lean", "A.lean")])
    with pytest.raises(ValueError, match="import cycle"):
        dependency_order(g)


# -- the export folder -----------------------------------------------------------------------
def test_write_export_of_built_traced_objects_has_full_layout_atomically(tmp_path):
    export = build_export_of_sample()
    out = write_export(export, tmp_path / "alpha-export")
    files = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert files == [
        "corpus.jsonl",
        "metadata.json",
        "novel_premises/test.json",
        "novel_premises/train.json",
        "novel_premises/val.json",
        "random/test.json",
        "random/train.json",
        "random/val.json",
        "traced_files.jsonl",
    ]
    for kind in ("random", "novel_premises"):
        assert json.loads((out / kind / "train.json").read_text(encoding="utf-8")) == export.theorems
        assert json.loads((out / kind / "val.json").read_text()) == []
        assert json.loads((out / kind / "test.json").read_text()) == []
    lines = (out / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(x) for x in lines] == export.corpus
    assert "ℕ" in lines[2]  # written as UTF-8, not \u escapes
    traced = [json.loads(x) for x in (out / "traced_files.jsonl").read_text().splitlines()]
    assert traced == export.traced_files
    assert json.loads((out / "metadata.json").read_text())["dojoflow_splits"] == "unassigned"
    assert [p.name for p in tmp_path.iterdir()] == ["alpha-export"]  # no temp leftovers


def test_write_export_failure_mid_write_leaves_no_folder_and_keeps_the_old_one(tmp_path):
    export = build_export_of_sample()
    export.metadata["unserializable"] = object()  # metadata.json is written last: fails after the rest
    with pytest.raises(TypeError):
        write_export(export, tmp_path / "new-export")
    assert list(tmp_path.iterdir()) == []

    good = write_export(build_export_of_sample(), tmp_path / "old-export")
    before = (good / "random" / "train.json").read_bytes()
    with pytest.raises(TypeError):
        write_export(export, good)
    assert (good / "random" / "train.json").read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["old-export"]


def test_written_export_of_built_traced_objects_is_read_by_the_store_importer(tmp_path):
    from storage.leandojo import read_export

    out = write_export(build_export_of_sample(), tmp_path / "alpha-export")
    repos = {d.repository["url"]: d for d in read_export(out)}
    assert set(repos) == {EXPORT_URL, STD_URL}
    alpha = repos[EXPORT_URL]
    assert alpha.repository["commit"] == ALPHA_SHA
    assert sorted(alpha.theorems["full_name"].to_pylist()) == ["Alpha.double_comm", "Alpha.double_eq"]
    assert alpha.tactics.num_rows == 2
    assert repos[STD_URL].theorems["full_name"].to_pylist() == ["Std.and_swap"]
    # the importer assigned splits itself (every theorem has one)
    assert None not in alpha.theorems["split_random"].to_pylist()


# -- toolchain ---------------------------------------------------------------------------------
def write_script(folder: Path, name: str, body: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    p = folder / name
    p.write_text("#!/bin/sh\n" + body)
    p.chmod(p.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return p


def fake_lean_bin(folder: Path, lean_version: str = "4.9.0") -> Path:
    """Test doubles of `lake` and `lean`: they print what the real ones print, and do nothing else."""
    write_script(
        folder,
        "lean",
        f'case "$1" in\n  --githash) echo {LEAN4_SHA} ;;\n'
        f'  *) echo "Lean (version {lean_version}, x86_64-unknown-linux-gnu, commit 4e4e4e4e4e4e, Release)" ;;\n'
        "esac\n",
    )
    write_lake(folder, lean_version)  # prints its version; fetches and builds (tests/doubles/tracing_lake.py)
    return folder


def git_dir() -> str:
    return os.path.dirname(shutil.which("git"))


def test_find_toolchain_fails_at_once_when_path_has_no_lake(tmp_path, monkeypatch):
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    with pytest.raises(ToolchainMissingError) as e:
        find_toolchain()
    msg = str(e.value)
    assert "lake" in e.value.program and "lean" in e.value.program and "git" in e.value.program
    assert "curl https://raw.githubusercontent.com/leanprover/elan/master/elan-init.sh -sSf | sh" in msg
    assert "pip install 'dojoflow[lean]'" in msg
    assert str(empty) in msg


def test_find_toolchain_with_test_double_lake_and_lean_scripts_parses_versions(tmp_path):
    bin_dir = fake_lean_bin(tmp_path / "bin")
    tc = find_toolchain(path=f"{bin_dir}{os.pathsep}{git_dir()}", require_lean_dojo=False)
    assert (tc.lean.version, tc.lake.version) == ("4.9.0", "5.0.0-4e4e4e4")
    assert tc.lean.path == str(bin_dir / "lean") and tc.lake.path == str(bin_dir / "lake")
    assert tc.git.version == subprocess.run(["git", "--version"], capture_output=True, text=True).stdout.split()[2]
    assert tc.lean_dojo_version is None


def test_find_toolchain_rejects_test_double_lean_with_unreadable_version(tmp_path):
    bin_dir = fake_lean_bin(tmp_path / "bin")
    write_script(bin_dir, "lean", 'echo "something else entirely"\n')
    with pytest.raises(ToolchainError, match="cannot read a version"):
        find_toolchain(path=f"{bin_dir}{os.pathsep}{git_dir()}", require_lean_dojo=False)


def test_find_toolchain_says_how_to_install_lean_dojo(tmp_path):
    import importlib.util

    if importlib.util.find_spec("lean_dojo") is not None:
        pytest.skip("lean_dojo is installed in this environment")
    bin_dir = fake_lean_bin(tmp_path / "bin")
    with pytest.raises(LeanDojoMissingError) as e:
        find_toolchain(path=f"{bin_dir}{os.pathsep}{git_dir()}")
    assert isinstance(e.value, ToolchainMissingError)
    assert "pip install -e '.[lean]'" in str(e.value)


def test_find_toolchain_rejects_another_lean_dojo_release(tmp_path):
    pkgs = tmp_path / "pkgs"
    (pkgs / "lean_dojo").mkdir(parents=True)
    (pkgs / "lean_dojo" / "__init__.py").write_text("")
    (pkgs / "lean_dojo-4.19.0.dist-info").mkdir()
    (pkgs / "lean_dojo-4.19.0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: lean-dojo\nVersion: 4.19.0\n"
    )
    bin_dir = fake_lean_bin(tmp_path / "bin")
    with pytest.raises(ToolchainError, match="lean-dojo==4.20.0"):
        find_toolchain(path=f"{bin_dir}{os.pathsep}{git_dir()}", pythonpath=[pkgs])


# -- input checks ------------------------------------------------------------------------------
def git(cwd: Path, *args: str) -> str:
    res = subprocess.run(
        [
            "git",
            "-c",
            "user.name=Test",
            "-c",
            "user.email=test@example.invalid",
            "-c",
            "commit.gpgsign=false",
            "-c",
            "init.defaultBranch=main",
            *args,
        ],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )
    return res.stdout.strip()


def make_lean_repo(path: Path, files: dict[str, str] | None = None) -> str:
    """A git repository shaped like a Lake project; returns its HEAD commit."""
    path.mkdir(parents=True)
    content = {
        "lakefile.lean": "import Lake\nopen Lake DSL\npackage alpha\n@[default_target] lean_lib Alpha\n"
        'require std from git "https://github.com/leanprover/std4" @ "main"\n',
        "lean-toolchain": "leanprover/lean4:v4.9.0\n",
        "Alpha/Basic.lean": "def Alpha.double (n : Nat) : Nat := n + n\n",
        **(files or {}),
    }
    for name, text in content.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    git(path, "init", "-q")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "init")
    return git(path, "rev-parse", "HEAD")


def test_trace_repository_rejects_a_missing_path(tmp_path):
    missing = tmp_path / "no-such-repo"
    with pytest.raises(InputError, match="does not exist") as e:
        trace_repository(str(missing), None, tmp_path / "out", tmp_path / "work")
    assert str(missing) in str(e.value)
    assert not (tmp_path / "out").exists() and not (tmp_path / "work").exists()


def test_trace_repository_rejects_a_folder_that_is_not_a_git_repository(tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "lakefile.lean").write_text("import Lake\n")
    with pytest.raises(InputError, match="is not a git repository") as e:
        trace_repository(str(plain), None, tmp_path / "out", tmp_path / "work")
    assert str(plain) in str(e.value)


@pytest.mark.parametrize("bad", ["main", "v4.9.0", "HEAD~1", "xyz123", "abc", "a" * 41])
def test_trace_repository_rejects_a_commit_that_is_not_hex(tmp_path, bad):
    make_lean_repo(tmp_path / "alpha")
    with pytest.raises(InputError, match="is not a commit hash") as e:
        trace_repository(str(tmp_path / "alpha"), bad, tmp_path / "out", tmp_path / "work")
    assert str(e.value).startswith(f"{bad}, commit:")
    assert "git rev-parse" in str(e.value)


def test_trace_repository_rejects_a_commit_not_in_the_repository(tmp_path):
    make_lean_repo(tmp_path / "alpha")
    with pytest.raises(InputError, match="is not a commit of") as e:
        trace_repository(str(tmp_path / "alpha"), "deadbeef", tmp_path / "out", tmp_path / "work")
    assert "deadbeef" in str(e.value)


def test_trace_repository_rejects_a_repository_without_lakefile(tmp_path):
    repo = tmp_path / "notlean"
    repo.mkdir()
    (repo / "README.md").write_text("hello\n")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "init")
    with pytest.raises(InputError, match="no lakefile.lean or lakefile.toml"):
        trace_repository(str(repo), None, tmp_path / "out", tmp_path / "work")


def test_trace_repository_rejects_a_subfolder_of_a_repository(tmp_path):
    make_lean_repo(tmp_path / "alpha")
    with pytest.raises(InputError, match="not its root"):
        trace_repository(str(tmp_path / "alpha" / "Alpha"), None, tmp_path / "out", tmp_path / "work")


def test_trace_repository_refuses_to_overwrite_a_folder_that_is_not_an_export(tmp_path):
    make_lean_repo(tmp_path / "alpha")
    out = tmp_path / "out"
    out.mkdir()
    (out / "precious.txt").write_text("keep me")
    with pytest.raises(InputError, match="not a LeanDojo export"):
        trace_repository(str(tmp_path / "alpha"), None, out, tmp_path / "work")
    assert (out / "precious.txt").read_text() == "keep me"


def test_trace_repository_without_lake_fails_before_cloning(tmp_path, monkeypatch):
    make_lean_repo(tmp_path / "alpha")
    monkeypatch.setenv("PATH", git_dir())  # git, and no lake or lean
    if shutil.which("lake") or shutil.which("lean"):
        pytest.skip("a lake or lean sits beside git on this machine")
    with pytest.raises(ToolchainMissingError, match="lake, lean"):
        trace_repository(str(tmp_path / "alpha"), None, tmp_path / "out", tmp_path / "work")
    assert not (tmp_path / "work" / "checkouts").exists()


# -- the whole path, with a test double of the lean_dojo package -------------------------------
# The double has the module layout and the names the worker touches (LeanGitRepo, trace,
# data_extraction.lean's RepoType, normalize_url, get_lean4_version_from_config, LEAN4_URL).
# Its LeanGitRepo.get_dependencies fails as the real one does without network, so the trace
# only succeeds if the worker replaced it. Its trace() records the environment it ran in and
# returns the traced objects built above, with the dependencies get_dependencies gave it.
FAKE_LEAN_PY = """
import os, re, subprocess
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

LEAN4_URL = "https://github.com/leanprover/lean4"
_LEAN4_VERSION_REGEX = re.compile(r"leanprover/lean4:(?P<version>.+?)")


class RepoType(Enum):
    GITHUB = 0
    REMOTE = 1
    LOCAL = 2


def normalize_url(url, repo_type=RepoType.GITHUB):
    if repo_type == RepoType.LOCAL:
        return os.path.abspath(url)
    return url.rstrip("/")


def get_lean4_version_from_config(toolchain):
    m = _LEAN4_VERSION_REGEX.fullmatch(toolchain.strip())
    assert m is not None, "Invalid config."
    v = m["version"]
    if not v.startswith("v") and v[0].isnumeric():
        v = "v" + v
    return v


@dataclass(frozen=True)
class LeanGitRepo:
    url: str
    commit: str
    repo: object = field(init=False, repr=False)
    lean_version: str = field(init=False, repr=False)
    repo_type: RepoType = field(init=False, repr=False)

    def __post_init__(self):
        assert not self.url.startswith("http"), "test double: only local repositories"
        object.__setattr__(self, "url", normalize_url(self.url, RepoType.LOCAL))
        object.__setattr__(self, "repo_type", RepoType.LOCAL)
        object.__setattr__(self, "repo", "git.Repo handle")
        version = get_lean4_version_from_config((Path(self.url) / "lean-toolchain").read_text())
        object.__setattr__(self, "lean_version", version)

    @property
    def name(self):
        return os.path.basename(self.url)

    def clone_and_checkout(self):
        # lean.py `clone_and_checkout`: Repo.clone_from(self.url, Path(self.name), no_checkout=True),
        # then `repo.git.checkout(self.commit)`: a git clone, without what git does not track
        subprocess.run(["git", "clone", "-q", "--no-checkout", self.url, self.name], check=True)
        subprocess.run(["git", "-C", self.name, "checkout", "-q", self.commit], check=True)

    def get_dependencies(self, path=None):
        raise ConnectionError("test double: lean-dojo's get_dependencies asks api.github.com here")
"""

FAKE_TRACE_PY = """
import json, os, signal, subprocess, sys, tempfile, time
from pathlib import Path


def trace(repo, dst_dir=None, build_deps=True):
    print(f"test double of lean_dojo.trace: tracing {repo.url} at {repo.commit}", flush=True)
    observed = {"env": dict(os.environ), "cwd": os.getcwd(), "build_deps": build_deps,
                "checkout": repo.url, "files": sorted(os.listdir(repo.url)), "commit": repo.commit}
    Path(os.environ["CACHE_DIR"], "observed_by_test_double.json").write_text(json.dumps(observed))
    fail = Path(repo.url) / "FAIL_TRACE"
    if fail.exists():
        raise RuntimeError(fail.read_text().strip())
    if (Path(repo.url) / "KILL_TRACE").exists():  # as the kernel's OOM killer would
        os.kill(os.getpid(), signal.SIGKILL)
    if (Path(repo.url) / "SLOW_TRACE").exists():  # a build that hangs, with a process of its own (like lake)
        # Named by a marker in its command line: under bubblewrap its pid is its PID namespace's.
        marker = os.path.join(os.environ["CACHE_DIR"], "grandchild")
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", marker])
        Path(os.environ["CACHE_DIR"], "grandchild.pid").write_text(marker)  # the event: the hang began
        time.sleep(600)  # forever, as far as a test is concerned
    # trace.py `get_traced_repo_path` / `_trace`: in a temporary folder, clone the repo, then
    # `lake build` in it (lean-dojo's `execute` raises CalledProcessError when it fails)
    work = tempfile.mkdtemp(dir=os.environ["TMP_DIR"])
    os.chdir(work)
    repo.clone_and_checkout()
    os.chdir(repo.name)
    subprocess.run(["lake", "build"], check=True)
    deps = repo.get_dependencies(Path(repo.url))  # as TracedRepo.load_from_disk does
    from tests.tasks.test_tracing import build_sample_traced_repo
    return build_sample_traced_repo(main_repo=repo, dependencies=deps)
"""


def fake_lean_dojo_package(root: Path) -> Path:
    pkg = root / "lean_dojo"
    (pkg / "data_extraction").mkdir(parents=True)
    (pkg / "__init__.py").write_text(
        '"""Test double of lean-dojo 4.20.0 (Dojoflow tests): no Lean runs."""\n__version__ = "4.20.0"\n'
        "from .data_extraction.lean import LeanGitRepo\nfrom .data_extraction.trace import trace\n"
    )
    (pkg / "data_extraction" / "__init__.py").write_text("")
    (pkg / "data_extraction" / "lean.py").write_text(FAKE_LEAN_PY)
    (pkg / "data_extraction" / "trace.py").write_text(FAKE_TRACE_PY)
    dist = root / "lean_dojo-4.20.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: lean-dojo\nVersion: 4.20.0\n")
    return root


MANIFEST = {
    "version": 7,
    "packagesDir": ".lake/packages",
    "name": "alpha",
    "lakeDir": ".lake",
    "packages": [
        {
            "url": STD_URL,
            "type": "git",
            "subDir": None,
            "rev": "7e" * 20,
            "name": "std",
            "manifestFile": "lake-manifest.json",
            "inputRev": "main",
            "inherited": False,
            "configFile": "lakefile.lean",
        }
    ],
}


@pytest.fixture
def traced_env(tmp_path, monkeypatch):
    """A Lake-shaped git repo, test-double lake/lean on PATH, a test-double lean_dojo, a secret in env."""
    sha = make_lean_repo(tmp_path / "alpha", {"lake-manifest.json": json.dumps(MANIFEST)})
    (tmp_path / "alpha" / "Scratch.lean").write_text("-- not committed\n")
    bin_dir = fake_lean_bin(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{git_dir()}")
    monkeypatch.setenv("GITHUB_ACCESS_TOKEN", "ghp_secret_must_not_leak")
    monkeypatch.setenv("DOJOFLOW_TEST_SECRET", "hunter2")
    return {
        "repo": tmp_path / "alpha",
        "sha": sha,
        "pkgs": fake_lean_dojo_package(tmp_path / "pkgs"),
        "out": tmp_path / "exports" / "alpha",
        "work": tmp_path / "work",
    }


def test_trace_repository_with_test_double_lean_dojo_writes_the_export(traced_env):
    e = traced_env
    out = trace_repository(str(e["repo"]), None, e["out"], e["work"], extra_pythonpath=[e["pkgs"]], num_procs=1)
    assert out == e["out"].resolve()
    repo_url = str(e["repo"].resolve())
    theorems = json.loads((out / "random" / "train.json").read_text(encoding="utf-8"))
    assert theorems == json.loads((out / "novel_premises" / "train.json").read_text(encoding="utf-8"))
    main = [t for t in theorems if t["url"] == repo_url]
    assert sorted(t["full_name"] for t in main) == ["Alpha.double_comm", "Alpha.double_eq"]
    assert {t["commit"] for t in main} == {e["sha"]}
    # the dependency's url and commit come from lake-manifest.json, read by the offline get_dependencies
    std = [t for t in theorems if t["full_name"] == "Std.and_swap"]
    assert [(t["url"], t["commit"]) for t in std] == [(STD_URL, "7e" * 20)]
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["from_repo"] == {"url": repo_url, "commit": e["sha"]}
    assert meta["dojoflow_splits"] == "unassigned" and meta["leandojo_version"] == "4.20.0"
    assert meta["lean_version"] == "v4.9.0"
    assert meta["commit_time"] and meta["toolchain"]["lean"]["version"] == "4.9.0"
    # lean4's commit is what `lean --githash` (the test double) printed, not a GitHub lookup
    assert {d["name"]: d["commit"] for d in meta["dependencies"]} == {"lean4": LEAN4_SHA, "std": "7e" * 20}

    # the worker ran in the work folder, on a clean checkout, with a minimal environment
    work = e["work"].resolve()
    observed = json.loads(next(work.rglob("observed_by_test_double.json")).read_text())
    env = observed["env"]
    assert "GITHUB_ACCESS_TOKEN" not in env and "DOJOFLOW_TEST_SECRET" not in env
    assert env["DISABLE_REMOTE_CACHE"] == "1" and env["NUM_PROCS"] == "1"
    assert Path(env["CACHE_DIR"]).is_relative_to(work) and Path(env["TMP_DIR"]).is_relative_to(work)
    assert Path(observed["cwd"]).is_relative_to(work)
    assert Path(observed["checkout"]).is_relative_to(work / "checkouts")
    assert observed["commit"] == e["sha"] and observed["build_deps"] is True
    assert "Scratch.lean" not in observed["files"]  # uncommitted work is not traced
    assert (e["repo"] / "Scratch.lean").exists()  # and the user's folder is untouched
    assert [p.name for p in out.parent.iterdir()] == ["alpha"]  # no temp leftovers

    # a second run replaces the export and reuses the checkout
    again = trace_repository(str(e["repo"]), e["sha"][:10], e["out"], e["work"], extra_pythonpath=[e["pkgs"]])
    assert json.loads((again / "random" / "train.json").read_text(encoding="utf-8")) == theorems


def test_trace_repository_with_test_double_lean_dojo_failure_leaves_no_export(traced_env):
    e = traced_env
    (e["repo"] / "FAIL_TRACE").write_text("lake build failed: Alpha/Basic.lean:3:2: unknown identifier 'foo'\n")
    git(e["repo"], "add", "FAIL_TRACE")
    git(e["repo"], "commit", "-q", "-m", "break the build")
    with pytest.raises(TracingError) as info:
        trace_repository(str(e["repo"]), None, e["out"], e["work"], extra_pythonpath=[e["pkgs"]])
    err = info.value
    assert "unknown identifier 'foo'" in str(err)
    assert "lake build" in err.fix and err.transient is False
    assert Path(err.log_path).exists() and "test double of lean_dojo.trace" in Path(err.log_path).read_text()
    assert not e["out"].exists()
    assert list(e["out"].parent.iterdir()) == []  # no temp folder left beside it


def test_trace_repository_of_a_git_url_with_test_double_lean_dojo(traced_env, tmp_path):
    """A url goes through `git ls-remote` (no commit given) and `git clone`; file:// keeps it offline."""
    e = traced_env
    bare = tmp_path / "remote" / "alpha.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(e["repo"]), str(bare)], check=True)
    url = f"file://{bare}/"
    out = trace_repository(url, None, e["out"], e["work"], extra_pythonpath=[e["pkgs"]])
    meta = json.loads((out / "metadata.json").read_text())
    # the recorded url drops the trailing "/" and ".git"; HEAD was resolved to the full hash
    assert meta["from_repo"] == {"url": f"file://{tmp_path / 'remote' / 'alpha'}", "commit": e["sha"]}
    theorems = json.loads((out / "random" / "train.json").read_text(encoding="utf-8"))
    assert {t["url"] for t in theorems if t["full_name"].startswith("Alpha.")} == {meta["from_repo"]["url"]}

    with pytest.raises(InputError, match="is not a commit of"):
        trace_repository(url, "0badc0de", tmp_path / "out2", e["work"], extra_pythonpath=[e["pkgs"]])
    assert not (tmp_path / "out2").exists()


def load_fake_lean_module(tmp_path: Path):
    import importlib.util

    path = tmp_path / "fake_ld_lean.py"
    path.write_text(FAKE_LEAN_PY)
    spec = importlib.util.spec_from_file_location("fake_ld_lean_for_tests", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_offline_dependencies_reads_test_double_lean_and_lake_manifest(tmp_path, monkeypatch):
    from tasks.tracing.worker import offline_dependencies

    ld_lean = load_fake_lean_module(tmp_path)
    monkeypatch.setenv("PATH", str(fake_lean_bin(tmp_path / "bin")))
    root = tmp_path / "traced" / "alpha"
    (root / ".lake" / "packages" / "std").mkdir(parents=True)
    (root / "lean-toolchain").write_text("leanprover/lean4:v4.9.0\n")
    (root / ".lake" / "packages" / "std" / "lean-toolchain").write_text("leanprover/lean4:v4.8.0\n")
    old_format = {"version": 5, "packages": [{"git": {"url": STD_URL + "/", "rev": STD_SHA, "name": "std"}}]}
    (root / "lake-manifest.json").write_text(json.dumps(old_format))
    deps = offline_dependencies(ld_lean, root)
    assert {k: (d.url, d.commit, d.lean_version, d.repo_type.name) for k, d in deps.items()} == {
        "lean4": (LEAN4_URL, LEAN4_SHA, "latest", "GITHUB"),
        "std": (STD_URL, STD_SHA, "v4.8.0", "GITHUB"),
    }
    assert all(isinstance(d, ld_lean.LeanGitRepo) for d in deps.values())

    path_dep = {"version": 7, "packages": [{"type": "path", "name": "helper", "dir": "../helper"}]}
    (root / "lake-manifest.json").write_text(json.dumps(path_dep))
    with pytest.raises(InputError, match="'helper' is a local"):
        offline_dependencies(ld_lean, root)


def commit_marker(repo: Path, name: str, text: str = "") -> None:
    (repo / name).write_text(text)
    git(repo, "add", name)
    git(repo, "commit", "-q", "-m", f"add {name}")


def is_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except (OSError, IndexError):
        return True


def test_trace_repository_with_test_double_lean_dojo_killed_worker_says_out_of_memory(traced_env):
    e = traced_env
    commit_marker(e["repo"], "KILL_TRACE")
    with pytest.raises(TracingError, match="killed by SIGKILL \\(most likely out of memory\\)") as info:
        trace_repository(str(e["repo"]), None, e["out"], e["work"], extra_pythonpath=[e["pkgs"]])
    assert "num_procs" in info.value.fix
    assert not e["out"].exists() and list(e["out"].parent.iterdir()) == []


def test_trace_repository_with_test_double_lean_dojo_timeout_stops_the_worker_and_its_children(traced_env):
    """The double hangs for good once it has started a child of its own and written `grandchild.pid`.
    The timeout must fire after that event for the test to see the child: on a loaded machine the
    worker may not get there within a short timeout, so a try that timed out before the event is
    tried again with a longer one (the timeout never races the assertion)."""
    import time

    e = traced_env
    commit_marker(e["repo"], "SLOW_TRACE")
    for timeout_s in (3, 15, 60, 240):
        t0 = time.monotonic()
        with pytest.raises(TracingError, match=f"did not finish within {timeout_s} s"):
            trace_repository(str(e["repo"]), None, e["out"], e["work"], extra_pythonpath=[e["pkgs"]],
                             timeout_s=timeout_s)  # fmt: skip
        assert time.monotonic() - t0 < timeout_s + 120  # stopped on time, not after the double's hang
        assert not e["out"].exists() and not any(e["out"].parent.glob("*"))  # nothing half-written
        started = next(e["work"].rglob("grandchild.pid"), None)
        if started is not None:
            break
    assert started is not None, "the double never started its child, even with a 240 s timeout"
    marker = started.read_text()

    def grandchild_alive() -> bool:
        return any(marker in (p.info["cmdline"] or []) for p in psutil.process_iter(["cmdline"]))

    deadline = time.monotonic() + 60  # the event: the grandchild is gone; a generous ceiling
    while grandchild_alive() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not grandchild_alive(), "a process the worker started outlived the timeout"


@pytest.mark.parametrize("toolchain", ["leanprover/lean4:v4.28.0", "leanprover/lean4:v4.8.0"])
def test_trace_refuses_a_lean_version_lean_dojo_cannot_trace_before_any_build(traced_env, toolchain):
    """Mismatch #12: lean-dojo 4.20's ExtractData.lean breaks at v4.28 and fails on v4.8 (LeanAgent#7);
    the refusal comes before lean-dojo starts, not after hours of `lake build`."""
    e = traced_env
    (e["repo"] / "lean-toolchain").write_text(toolchain + "\n")
    git(e["repo"], "commit", "-qam", "toolchain")
    with pytest.raises(InputError) as err:
        trace_repository(str(e["repo"]), None, e["out"], e["work"], extra_pythonpath=[e["pkgs"]], num_procs=1)
    msg = str(err.value)
    assert "\n" not in msg and str(e["repo"].resolve()) in msg and toolchain.split(":")[1] in msg
    assert "v4.9.0 to v4.27.x" in msg and "ExtractData" in msg
    assert not (e["work"] / "jobs").exists() or not list((e["work"] / "jobs").iterdir())  # no worker started
    assert not e["out"].exists()


def test_build_deps_false_is_refused_before_any_work(tmp_path):
    """Conformance #16: with build_deps false lean-dojo builds no file graph, and the export of the
    corpus failed only after the whole trace."""
    from pydantic import ValidationError

    from tasks.config import TracingConfig

    with pytest.raises(ValidationError, match="tracing.build_deps: true"):
        TracingConfig(build_deps=False)
    with pytest.raises(InputError, match="build_deps") as err:
        trace_repository(str(tmp_path / "not-even-there"), None, tmp_path / "out", tmp_path / "work", build_deps=False)
    assert "corpus" in str(err.value)
    assert not (tmp_path / "work").exists()  # nothing started


# -- the fetch step has the network, the build does not (issue 16 §3) --------------------------
class Listener:
    """A TCP listener on 127.0.0.1 that records what each connection sends."""

    def __init__(self):
        import socket
        import threading

        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.received: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(10)
                self.received.append(conn.recv(1024).decode(errors="replace"))

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.sock.close()


@pytest.fixture
def listener():
    server = Listener()
    yield server
    server.close()


def test_trace_fetches_dependencies_with_the_network_and_builds_without_it(traced_env, listener):
    """The fetch step (`lake resolve-deps`) may reach the package's host; the build (lean-dojo's
    `lake build`, the repository's code) runs in an empty network namespace: its connection to
    the test's listener fails, and it needs none, since the fetched packages are in its clone."""
    e = traced_env
    commit_marker(e["repo"], ".double-remote", f"127.0.0.1 {listener.port}\n")
    out = trace_repository(str(e["repo"]), None, e["out"], e["work"], extra_pythonpath=[e["pkgs"]], num_procs=1)
    assert (out / "metadata.json").exists()
    assert listener.received == ["clone std"]  # the fetch step's clone, and nothing from the build
    work = e["work"].resolve()
    key = git(e["repo"], "rev-parse", "HEAD")[:12]
    fetch_log = (work / "logs" / f"fetch-{key}.log").read_text()
    assert "resolve-deps" in fetch_log and "std: cloning" in fetch_log
    trace_log = (work / "logs" / f"trace-{key}.log").read_text()
    assert "std: checking out revision" in trace_log  # the build found the fetched package
    assert "network probe: failed" in trace_log and "network probe: connected" not in trace_log
    assert (next((work / "checkouts").iterdir()) / "alpha" / ".lake" / "packages" / "std").is_dir()


def test_a_fetch_that_cannot_reach_a_package_fails_before_the_build(traced_env, listener):
    e = traced_env
    port = listener.port
    listener.close()  # nothing listens there any more: the clone is refused
    commit_marker(e["repo"], ".double-remote", f"127.0.0.1 {port}\n")
    with pytest.raises(TracingError) as info:
        trace_repository(str(e["repo"]), None, e["out"], e["work"], extra_pythonpath=[e["pkgs"]])
    err = info.value
    assert "fetching the dependencies" in str(err) and "failed to clone" in err.log_tail
    assert "lake resolve-deps" in err.fix
    assert not list((e["work"] / "jobs").glob("*.json"))  # the worker never started
    assert not e["out"].exists()


def test_the_real_lean_dojo_clone_gets_the_fetched_packages(tmp_path):
    """worker.install_fetched_packages wraps the real lean-dojo 4.20.0 `LeanGitRepo.clone_and_checkout`
    (a GitPython clone, which leaves untracked `.lake/packages/` out): after it, the clone lean-dojo
    builds in holds the packages the fetch step put into the checkout. A local clone: no network.
    Run in a child process, since importing lean-dojo resets loguru's handlers."""
    import importlib.util

    if importlib.util.find_spec("lean_dojo") is None:
        pytest.skip("lean_dojo is not installed (pip install -e '.[lean]')")
    sha = make_lean_repo(tmp_path / "alpha")
    (tmp_path / "alpha" / ".lake" / "packages" / "std").mkdir(parents=True)
    (tmp_path / "alpha" / ".lake" / "packages" / "std" / "lean-toolchain").write_text("leanprover/lean4:v4.9.0\n")
    (tmp_path / "work").mkdir()
    script = (
        "import os, sys, lean_dojo\n"
        "from lean_dojo.data_extraction import lean as ld\n"
        "from tasks.tracing.worker import install_fetched_packages\n"
        "install_fetched_packages(ld)\n"
        "repo = lean_dojo.LeanGitRepo(sys.argv[1], sys.argv[2])\n"
        "assert repo.repo_type == ld.RepoType.LOCAL\n"
        "os.chdir(sys.argv[3])\n"
        "repo.clone_and_checkout()\n"
    )
    env = {**os.environ, "CACHE_DIR": str(tmp_path / "cache"), "DISABLE_REMOTE_CACHE": "1"}
    env.pop("GITHUB_ACCESS_TOKEN", None)
    res = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "alpha"), sha, str(tmp_path / "work")],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    clone = tmp_path / "work" / "alpha"
    assert git(clone, "rev-parse", "HEAD") == sha
    assert (clone / ".lake" / "packages" / "std" / "lean-toolchain").exists()
