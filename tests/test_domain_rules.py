"""Each domain rule has one definition, at the lowest layer that needs it, and every reader
agrees with it (issue 15 §A.4). One table per rule, one case per line; then a scan of the
source for the rule's literal anywhere but its home.

| rule                               | home                                   |
|------------------------------------|----------------------------------------|
| a tactic uses sorry                | storage/lean_lexer.py (tests/storage/test_lean_text.py) |
| a state says the proof is finished | storage/tactic_text.py (`NO_GOALS`, `is_finished`) |
| the default allowed axioms         | storage/lean_text.py (`DEFAULT_ALLOWED_AXIOMS`) |
| the checkpoint manifest's name     | tasks/checkpoints.py (`MANIFEST`)      |
| the Dojoflow home's default        | storage/store.py (`dojoflow_home`)     |
| scientific notation in YAML        | tasks/yaml_config.py (`yaml_float`)    |

PYTHONPATH=$PWD python -m pytest tests/test_domain_rules.py -q
"""

from __future__ import annotations

import ast
from pathlib import Path
from types import SimpleNamespace

import pyarrow as pa
import pytest

from storage.lean_text import DEFAULT_ALLOWED_AXIOMS
from storage.store import dojoflow_home
from storage.tactic_text import finished_mask, is_finished
from tasks.grpo.rewards import count_goals
from tasks.models.loading import default_model_cache
from tasks.tracing.convert import keep_tactic
from tasks.yaml_config import load_yaml_mapping, yaml_float

ROOT = Path(__file__).resolve().parents[1]


# -- a state says the proof is finished --------------------------------------------------
@pytest.mark.parametrize(
    "state,finished",
    [
        ("no goals", True),  # LeanDojo's pp of a finished proof
        ("  no goals\n", True),  # whitespace around it aside
        ("n : Nat\n⊢ n + 0 = n", False),
        ("⊢ True\n\n⊢ False", False),
        ("", False),  # nothing says the proof ended
        ("No goals", False),  # Lean writes it in lower case
        ("no goals left", False),
        ("h : no goals\n⊢ p", False),  # a hypothesis that happens to be named so
    ],
)
def test_finished_state(state, finished):
    assert is_finished(state) is finished
    assert finished_mask(pa.array([state])).to_pylist() == [finished]  # the snapshot's filter
    assert keep_tactic(SimpleNamespace(state_before=state, tactic="simp")) is not finished  # tracing drops it
    if state.strip():
        assert (count_goals(state) == 0) is finished  # GRPO's goal count


# -- the default allowed axioms ----------------------------------------------------------
@pytest.mark.parametrize(
    "axiom,allowed",
    [
        ("propext", True),
        ("Classical.choice", True),
        ("Quot.sound", True),
        ("sorryAx", False),  # a proof with sorry
        ("Lean.ofReduceBool", False),  # native_decide trusts the compiler
        ("Lean.trustCompiler", False),
        ("Classical.em", False),  # a theorem, never an axiom `#print axioms` lists
    ],
)
def test_default_allowed_axioms(axiom, allowed):
    from tasks.lean.config import BackendSettings
    from tasks.lean.guard import DEFAULT_ALLOWED_AXIOMS as guard_default
    from tasks.search.result import SearchBudget

    assert (axiom in DEFAULT_ALLOWED_AXIOMS) is allowed
    assert guard_default is DEFAULT_ALLOWED_AXIOMS
    assert (axiom in SearchBudget().allowed_axioms) is allowed
    assert (axiom in BackendSettings().allowed_axioms) is allowed


# -- the checkpoint manifest's name ------------------------------------------------------
def test_one_manifest_name():
    from tasks.checkpoints import MANIFEST
    from tasks.generate.checkpoint import CHECKPOINT_MANIFEST
    from tasks.grpo.output_folder import CHECKPOINT_MANIFEST as grpo_manifest

    assert CHECKPOINT_MANIFEST is MANIFEST and grpo_manifest is MANIFEST == "dojoflow-checkpoint.json"


# -- the Dojoflow home's default ---------------------------------------------------------
@pytest.mark.parametrize(
    "given,env,expected",
    [
        (None, None, "{cwd}/.dojoflow"),  # nothing set: .dojoflow here
        (None, "", "{cwd}/.dojoflow"),  # an empty variable counts as unset
        (None, "/srv/df", "/srv/df"),  # $DOJOFLOW_HOME
        (None, "rel/home", "{cwd}/rel/home"),  # a relative variable, against the working directory
        ("/given", "/srv/df", "/given"),  # the caller's home wins over the variable
        ("~/df", None, "{home}/df"),  # ~ expanded
    ],
)
def test_dojoflow_home_default(given, env, expected, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    if env is None:
        monkeypatch.delenv("DOJOFLOW_HOME", raising=False)
    else:
        monkeypatch.setenv("DOJOFLOW_HOME", env)
    want = Path(expected.format(cwd=tmp_path.resolve(), home=tmp_path / "user")).resolve()
    assert dojoflow_home(given) == want
    assert default_model_cache(given) == want / "models"  # where builtin models are built


# -- scientific notation in YAML ---------------------------------------------------------
@pytest.mark.parametrize(
    "text,value",
    [
        ("1e-4", 1e-4),  # YAML 1.1 (PyYAML) reads a string
        ("5e-6", 5e-6),
        ("1.0e3", 1000.0),  # a dot but an unsigned exponent: a string in YAML 1.1 too
        ("-2E+2", -200.0),
        (".5e1", 5.0),
        ("1_000e-3", 1.0),  # YAML's digit separators
        ("1.5e-3", 1.5e-3),  # PyYAML's own float already
        ("1e", "1e"),  # not a number
        ("e5", "e5"),
        ("1e-4x", "1e-4x"),
    ],
)
def test_yaml_scientific_notation(text, value, tmp_path):
    from tasks.grpo.config import GRPOSettings

    path = tmp_path / "c.yaml"
    path.write_text(f"lr: {text}\n")
    loaded = load_yaml_mapping(path, "examples/")["lr"]
    assert loaded == value and type(loaded) is type(value)  # a config file
    assert yaml_float(text) == value  # text from elsewhere (a Prefect parameter typed in the UI)
    if isinstance(value, float):
        assert GRPOSettings(training={"learning_rate": text}).training["learning_rate"] == value


# -- one definition: the rule's literal appears in its home only ---------------------------
HOMES = [
    ("no goals", "storage/tactic_text.py"),
    ("dojoflow-checkpoint.json", "tasks/checkpoints.py"),
    (".dojoflow", "storage/store.py"),
    (DEFAULT_ALLOWED_AXIOMS, "storage/lean_text.py"),
]


def _literals(tree: ast.AST):
    """String and tuple-of-string constants in code, docstrings left out."""
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            yield node.value, node.lineno
        elif isinstance(node, ast.Tuple) and node.elts and all(isinstance(e, ast.Constant) for e in node.elts):
            yield tuple(e.value for e in node.elts), node.lineno


def test_each_rule_is_written_once():
    found: dict[object, list[str]] = {literal: [] for literal, _ in HOMES}
    for package in ("storage", "tasks", "flows"):
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel.startswith("storage/sample/content/"):  # sample data: what its proofs use, as Lean prints it
                continue
            for value, line in _literals(ast.parse(path.read_text(encoding="utf-8"))):
                if value in found:
                    found[value].append(f"{rel}:{line}")
    for literal, home in HOMES:
        assert [where.split(":")[0] for where in found[literal]] == [home], (literal, found[literal])
