"""No Prefect task takes or returns a bare dict (docs/architecture.md, "never a bare dict"), nor do
the plain functions behind them that make the run's records (RECORD_FUNCTIONS).

Every parameter and the return of every `@task` under tasks/prefect_tasks/ is annotated, and no
annotation is (or holds) a bare `dict`, `list`, `tuple`, `Any` or `object`: a record has a model
(tasks/proving/records.py, `CheckpointRef`, `SnapshotRef`, ...), a mapping says its key and value
types (`dict[str, int]`). ALLOWED names the few left, each with the reason.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TASKS = ROOT / "tasks" / "prefect_tasks"
BARE = {"dict", "list", "tuple", "Any", "object", "Dict", "List", "Tuple"}

# (module, task function, parameter or "return") -> why it stays untyped for now
ALLOWED: dict[tuple[str, str, str], str] = {}  # none left (issue 26 room 2): metric rows, regressions and
# the report's input and answer have models (tasks/run_records.py, tasks/events.py `Regression`)


def _is_task(fn: ast.FunctionDef) -> bool:
    for d in fn.decorator_list:
        target = d.func if isinstance(d, ast.Call) else d
        if isinstance(target, ast.Name) and target.id == "task":
            return True
    return False


def bare_names(annotation: ast.expr) -> list[str]:
    """The bare generic names in an annotation (`list[dict]` -> ["dict"]; `dict[str, int]` -> [])."""
    found: list[str] = []

    def walk(node: ast.expr, subscripted: bool = False) -> None:
        if isinstance(node, ast.Name):
            if node.id in BARE and not subscripted:
                found.append(node.id)
        elif isinstance(node, ast.Attribute):
            if node.attr in BARE and not subscripted:  # typing.Any
                found.append(node.attr)
        elif isinstance(node, ast.Subscript):
            walk(node.value, subscripted=True)
            walk(node.slice)
        elif isinstance(node, ast.Tuple):
            for e in node.elts:
                walk(e)
        elif isinstance(node, ast.BinOp):  # X | Y
            walk(node.left)
            walk(node.right)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):  # a string annotation
            walk(ast.parse(node.value, mode="eval").body, subscripted)

    walk(annotation)
    return found


# Plain functions below tasks/ that make or take the run's records (issue 26 room 2), typed as the tasks
# are: {module: functions}. Their unannotated parameters (a store, a loss) carry no record.
RECORD_FUNCTIONS: dict[str, tuple[str, ...]] = {
    "tasks/report.py": ("write_report",),
    "tasks/proving/evaluate.py": ("select_theorems", "prove_theorems", "proving_metrics"),
    "tasks/expert/rounds.py": ("metric_rows",),
    "tasks/expert/steps.py": ("metrics",),
    "tasks/expert/whole_proof.py": ("metrics",),
    "tasks/evaluation.py": ("evaluate_step",),
    "tasks/watch/plan.py": ("succeeded",),
}


def untyped(path: Path, names: tuple[str, ...] | None = None) -> dict[tuple[str, str, str], str]:
    """{(module, task, parameter or "return"): what is wrong} of one module's tasks, or of its
    functions `names` (top level; a parameter without annotation is not checked)."""
    out = {}
    for fn in ast.walk(ast.parse(path.read_text())) if names is None else ast.parse(path.read_text()).body:
        if not (isinstance(fn, ast.FunctionDef) and (_is_task(fn) if names is None else fn.name in names)):
            continue
        args = fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs
        for name, annotation in [(a.arg, a.annotation) for a in args] + [("return", fn.returns)]:
            key = (path.stem, fn.name, name)
            if annotation is None:
                if names is None or name == "return":
                    out[key] = "no annotation"
            elif bare := bare_names(annotation):
                out[key] = f"`{ast.unparse(annotation)}` holds a bare {', '.join(bare)}"
    return out


def test_the_checker_sees_bare_generics_and_accepts_typed_ones():
    def names(text: str) -> list[str]:
        return bare_names(ast.parse(text, mode="eval").body)

    assert names("dict") == ["dict"] and names("list[dict]") == ["dict"] and names("dict | None") == ["dict"]
    assert (
        names("tuple[dict, dict]") == ["dict", "dict"] and names("typing.Any") == ["Any"] and names("list") == ["list"]
    )
    assert names("'list[dict]'") == ["dict"]
    assert (
        names("dict[str, int]") == []
        and names("list[SearchRecord]") == []
        and names("tuple[Ref, dict[str, int]]") == []
    )
    assert names("CheckpointRef | None") == []


def test_no_prefect_task_takes_or_returns_a_bare_dict():
    found = {}
    for path in sorted(TASKS.glob("*.py")):
        found.update(untyped(path))
    unexpected = {k: why for k, why in found.items() if k not in ALLOWED}
    assert not unexpected, "type these task parameters (a model, or a parameterised mapping):\n" + "\n".join(
        f"  tasks/prefect_tasks/{m}.py {fn}({name}): {why}" for (m, fn, name), why in sorted(unexpected.items())
    )
    stale = sorted(set(ALLOWED) - set(found))
    assert not stale, f"typed now, so drop them from ALLOWED: {stale}"


def test_the_plain_functions_behind_the_tasks_take_and_return_records_not_bare_dicts():
    """write_report, proving_metrics, the expert rounds' metric rows, ... (RECORD_FUNCTIONS)."""
    found, missing = {}, []
    for module, names in RECORD_FUNCTIONS.items():
        tree = ast.parse((ROOT / module).read_text())
        missing += [f"{module}:{n}" for n in names if not any(getattr(f, "name", None) == n for f in tree.body)]
        found.update(untyped(ROOT / module, names))
    assert not missing, f"renamed or moved: update RECORD_FUNCTIONS: {missing}"
    assert not found, "type these (a record model, or a parameterised mapping):\n" + "\n".join(
        f"  {m} {fn}({name}): {why}" for (m, fn, name), why in sorted(found.items())
    )


def _signature(module: str, name: str) -> list[tuple[str, str]]:
    tree = ast.parse((ROOT / module).read_text())
    (fn,) = [f for f in tree.body if isinstance(f, ast.FunctionDef) and f.name == name]
    return [(a.arg, ast.unparse(a.annotation) if a.annotation else "") for a in fn.args.args]


def test_a_step_evaluation_and_expert_rounds_take_the_steps_context_as_one_object():
    """Room 4: the step's context (home, run, step, split kind, repositories) travels as one object,
    not as the eight arguments each call passed before (flows/curriculum.py EVALUATION_RUNS)."""
    assert _signature("flows/prove.py", "proving_step") == [
        ("at", "StepContext"), ("settings", "ProvingSettings"), ("checkpoint", "CheckpointRef")
    ]  # fmt: skip
    assert _signature("flows/expert.py", "expert_rounds") == [("at", "CurriculumStep"), ("start", "CheckpointRef")]
    assert "EVALUATION_RUNS[evaluation.name](at.context, " in (ROOT / "flows" / "curriculum.py").read_text()
