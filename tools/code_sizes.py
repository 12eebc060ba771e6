"""List the functions and modules over the size limits of STYLE.md (a report, not a test).

    python tools/code_sizes.py                      # tasks/ storage/ flows/, limits 60 and 400
    python tools/code_sizes.py --function 80 --module 600 storage

A function's length is its lines from `def` (decorators excluded) to its last line;
a module's is its line count. Sample content (storage/sample/) is not code and is skipped.
Exit status 1 when anything is over the limits, so it can gate a commit if one wants.
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

SKIP = ("storage/sample/",)


def python_files(roots: list[str]) -> list[Path]:
    files = [p for root in roots for p in sorted(Path(root).rglob("*.py"))]
    return [p for p in files if not any(part in p.as_posix() for part in SKIP)]


def long_functions(path: Path, limit: int) -> list[tuple[int, str, int]]:
    """(lines, qualified name, first line) of each function in `path` longer than `limit`."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    lines = child.end_lineno - child.lineno + 1
                    if lines > limit:
                        found.append((lines, name, child.lineno))
                visit(child, f"{name}.")

    visit(tree, "")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("roots", nargs="*", default=["tasks", "storage", "flows"])
    parser.add_argument("--function", type=int, default=60, help="longest function, in lines")
    parser.add_argument("--module", type=int, default=400, help="longest module, in lines")
    args = parser.parse_args(argv)
    over = 0
    for path in python_files(args.roots):
        n = len(path.read_text(encoding="utf-8").splitlines())
        if n > args.module:
            print(f"module   {n:5d}  {path}")
            over += 1
        for lines, name, line in long_functions(path, args.function):
            print(f"function {lines:5d}  {path}:{line} {name}")
            over += 1
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
