"""PutnamBench's Lean 4 files (trishullab/PutnamBench, lean4/src/putnam_YYYY_xN.lean): one theorem
per file, named after the file, proved by `sorry`; before it the imports, `open`s, and for a
problem that asks for an answer a `noncomputable abbrev putnam_..._solution : T := sorry` with the
answer in a comment after it; a docstring with the informal statement right before the theorem.

The header is everything before the theorem's docstring (the `_solution` abbrev included: the
theorem refers to it), the informal text is the docstring, the statement is the theorem up to its
`:=`. Lean and Mathlib versions come from `lean-toolchain` and `lake-manifest.json` in the folder
or one of its parents (PutnamBench keeps them in lean4/).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from ..errors import InputError

_DOC = re.compile(r"/--(.*?)-/\s*$", re.S)


def _versions(start: Path) -> dict:
    for folder in [start, *start.parents][:4]:
        toolchain = folder / "lean-toolchain"
        if toolchain.is_file():
            out = {"lean_version": toolchain.read_text().strip().split(":")[-1] or None}
            manifest = folder / "lake-manifest.json"
            if manifest.is_file():
                try:
                    packages = json.loads(manifest.read_text()).get("packages", [])
                    mathlib = next((p for p in packages if p.get("name") == "mathlib"), None)
                    if mathlib:
                        out["mathlib_version"] = mathlib.get("inputRev") or mathlib.get("rev")
                except ValueError:
                    pass
            return out
    return {}


def read_lean_files(path: Path) -> tuple[list[dict], dict]:
    """(records, versions) of a .lean file or a folder of them (sorted by name)."""
    files = sorted(path.glob("*.lean")) if path.is_dir() else [path]
    if not files:
        raise InputError(path, "holds no .lean file", "give PutnamBench's lean4/src folder or one of its files")
    records = []
    for row, file in enumerate(files):
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise InputError(file, f"cannot be read ({e})", "give a UTF-8 Lean file", where=f"row {row}") from None
        name = file.stem
        m = re.search(rf"(?m)^theorem\s+{re.escape(name)}\b", text)
        if m is None:
            raise InputError(
                file,
                f"declares no theorem `{name}` (PutnamBench names each file's theorem after the file)",
                "give PutnamBench's files unchanged",
                where=f"row {row}, field `file`",
            )
        before, statement = text[: m.start()], text[m.start() :]
        doc = _DOC.search(before)
        informal = doc.group(1).strip() if doc else None
        header = before[: doc.start()] if doc else before
        records.append(
            {
                "name": name,
                "statement": statement.strip(),
                "header": header,
                "informal": informal,
                "split": None,
                "source": f"putnambench:{file.name}",
                "row": row,
                "extra": None,
            }
        )
    return records, _versions(path if path.is_dir() else path.parent)
