"""No backend's name is compared or used as a key outside its own modules and the registry
(issue 26, A.1): code that needs a fact about a backend asks its declaration
(tasks/lean/registry.py), so a new backend is one module and one registry line
(docs/adding-a-backend.md).

A use is a comparison (`kind == "replay"`, `"replay" in checkers`, `case "replay":`), a key
(`x["kimina"]`, `{"repl": ...}`, `.get("repl")`, `getattr(s, "repl")`, `kimina=...` in a call) or a
per-backend section read by attribute (`settings.repl.projects`). Docstrings, help text and
messages may name a backend; so may tests, config YAML and a backend chosen as a value
(`BackendSettings(kind="repl")`).

    python tests/test_backend_names.py     # lists every use, with the count
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("storage", "tasks", "flows")
SKIPPED = ("storage/sample/",)  # sample data
DECLARATIONS = ("tasks/lean/registry.py", "tasks/lean/options.py")

# A use the rule cannot express, with the reason it stays.
ALLOWED = {
    ("flows/cli/statements.py", "kimina"): "`dojoflow statements verify` is a kimina-only command (--kimina-url)",
}


def backend_names() -> dict[str, str]:
    """{backend or gold checker name: the module stem prefix of its own modules}."""
    from tasks.lean.registry import backends, gold_checkers

    out = {}
    for name, d in [*backends().items(), *gold_checkers().items()]:
        module = d.opener.partition(":")[0].rsplit(".", 1)[-1]
        out[name] = module.split("_")[0]
    return out


def sectioned() -> set[str]:
    """The names that are a `backend.<name>` section (attribute reads of them are uses)."""
    from tasks.lean.registry import backends

    return {n for n, d in backends().items() if d.settings is not None}


def _own(rel: str, prefix: str) -> bool:
    stem = Path(rel).stem
    return rel.startswith("tasks/lean/") and (stem == prefix or stem.startswith(prefix + "_"))


def _constants(node: ast.AST) -> list[ast.Constant]:
    if isinstance(node, ast.Constant):
        return [node]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [e for e in node.elts if isinstance(e, ast.Constant)]
    return []


def uses(source: str, names: set[str], sections: set[str]) -> list[tuple[int, str, str]]:
    """(line, name, how) of every use of a name in `source` (see the module doc)."""
    found = []

    def const(nodes, how):
        for c in nodes:
            if isinstance(c.value, str) and c.value in names:
                found.append((c.lineno, c.value, how))

    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            for side in (node.left, *node.comparators):
                const(_constants(side), "compared")
        elif isinstance(node, ast.MatchValue):
            const(_constants(node.value), "compared")
        elif isinstance(node, ast.Subscript):
            const(_constants(node.slice), "a key")
        elif isinstance(node, ast.Dict):
            const([k for k in node.keys if k is not None and isinstance(k, ast.Constant)], "a key")
        elif isinstance(node, ast.Call):
            func = node.func
            method = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if method in ("get", "pop", "setdefault") and node.args:
                const(_constants(node.args[0]), "a key")
            if method in ("getattr", "hasattr", "setattr") and len(node.args) > 1:
                const(_constants(node.args[1]), "a key")
            found += [(node.lineno, k.arg, "a key") for k in node.keywords if k.arg in names]
        elif isinstance(node, ast.Attribute) and node.attr in sections and isinstance(node.ctx, ast.Load):
            found.append((node.lineno, node.attr, "a section read"))
    return sorted(set(found))


def every_use() -> list[str]:
    names = backend_names()
    sections = sectioned()
    out = []
    for top in SCANNED:
        for path in sorted((ROOT / top).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel.startswith(SKIPPED) or rel in DECLARATIONS:
                continue
            for line, name, how in uses(path.read_text(), set(names), sections):
                if not _own(rel, names[name]) and (rel, name) not in ALLOWED:
                    out.append(f"{rel}:{line}: {name!r} {how}")
    return out


def test_no_backend_name_is_compared_or_a_key_outside_its_modules():
    found = every_use()
    assert not found, "ask the backend's declaration (tasks/lean/registry.py) instead:\n" + "\n".join(found)


@pytest.mark.parametrize(
    "source,how",
    [
        ("if settings.kind == 'replay': pass", "compared"),
        ("x = 'kimina' in checkers", "compared"),
        ("match kind:\n    case 'leandojo': pass", "compared"),
        ("p = {'repl': 1}", "a key"),
        ("p = d['kimina']", "a key"),
        ("p = d.get('repl', {})", "a key"),
        ("p = getattr(s, 'leandojo')", "a key"),
        ("s = S(kimina={'url': u})", "a key"),
        ("p = settings.repl.projects", "a section read"),
    ],
)
def test_the_check_sees_a_planted_use(source, how):
    assert [u[2] for u in uses(source, set(backend_names()), sectioned())] == [how]


@pytest.mark.parametrize(
    "source",
    [
        '"""The replay backend answers from the store; compare `kind == "replay"`."""',
        "raise InputError('backend.kind', 'is replay', 'use repl or kimina')",
        "s = BackendSettings(kind='repl')",
        "from tasks.lean import replay",
    ],
)
def test_docs_messages_and_a_chosen_backend_are_not_uses(source):
    assert uses(source, set(backend_names()), sectioned()) == []


def test_a_backend_own_modules_and_the_registry_may_name_it():
    names = backend_names()
    assert _own("tasks/lean/repl_project.py", names["repl"])
    assert _own("tasks/lean/leandojo_worker.py", names["leandojo"])
    assert not _own("tasks/lean/replay.py", names["repl"]) and not _own("tasks/proving/repl.py", names["repl"])
    assert _own("tasks/lean/gold_backend.py", names["comparator"])


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    found = every_use()
    print("\n".join(found))
    print(f"{len(found)} uses of a backend name outside its modules and the registry")
