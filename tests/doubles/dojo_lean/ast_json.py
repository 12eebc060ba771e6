"""The `*.ast.json` a lean-dojo 4.20 trace leaves for a Lean file, reduced to what `Dojo` reads.

lean-dojo's `Dojo.__enter__` (lean_dojo/interaction/dojo.py:246-259) opens the traced file
with `TracedFile.from_traced_file` (data_extraction/traced_data.py:514-566), finds the
theorem by full name (`get_traced_theorem`, traced_data.py:741) and cuts the file at
`locate_proof()` (traced_data.py:332). The real file comes from `ExtractData.lean`:
`{"commandASTs": [{"node": SYNTAX}, ...], "tactics": [...], "premises": [...]}` with
Lean's `Syntax` as JSON (`node`/`atom`/`ident`, `info.original.{pos, endPos, leading,
trailing}` as UTF-8 byte offsets). This module writes the same shape for each top-level
`theorem` of a sample file, with only the node kinds ast.py needs to find a theorem and its
proof (`Command.declaration` > `Command.theorem` > `declId`, `declSig`, `declValSimple`,
ast.py:470-535, 1132-1200); the signature and the proof are single atoms, and `tactics` and
`premises` are empty: the Dojo reads neither. Names are written fully qualified (the
namespace prefix that `_post_process_lean4` would add from `namespace` nodes is folded in).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

_DECL = re.compile(r"^(theorem|lemma)\s+(\S+)")


def _atom(val: str, start: int, end: int) -> dict:
    return {"atom": {"info": {"original": {"leading": "", "pos": start, "trailing": "", "endPos": end}}, "val": val}}


def _node(kind: str, *args: dict) -> dict:
    return {"node": {"kind": kind, "info": "none", "args": list(args)}}


def _theorem(text: bytes, start: int, end: int, name: str) -> dict:
    """One `theorem NAME SIG := PROOF` spanning bytes [start, end) of the file."""
    decl = text[start:end]
    kw_end = start + len(b"theorem")
    name_start = start + decl.index(name.split(".")[-1].encode(), len(b"theorem"))
    name_end = name_start + len(name.split(".")[-1].encode())
    assign = start + decl.index(b":=", name_end - start)
    proof_start = assign + 2
    while text[proof_start : proof_start + 1] in (b" ", b"\n"):
        proof_start += 1
    ident = {
        "ident": {
            "info": {"original": {"leading": " ", "pos": name_start, "trailing": " ", "endPos": name_end}},
            "rawVal": name.split(".")[-1],
            "val": name,
            "preresolved": [],
        }
    }
    return _node(
        "Lean.Parser.Command.declaration",
        _node("Lean.Parser.Command.declModifiers"),
        _node(
            "Lean.Parser.Command.theorem",
            _atom("theorem", start, kw_end),
            _node("Lean.Parser.Command.declId", ident, _node("null")),
            _node(
                "Lean.Parser.Command.declSig", _atom(text[name_end:assign].decode().strip(), name_end + 1, assign - 1)
            ),
            _node(
                "Lean.Parser.Command.declValSimple",
                _atom(":=", assign, assign + 2),
                _node("Lean.Parser.Term.byTactic", _atom(text[proof_start:end].decode(), proof_start, end)),
            ),
        ),
    )


def theorem_spans(source: str) -> list[tuple[str, int, int]]:
    """(full name, start byte, end byte) of each top-level theorem: its first line and the
    indented lines after it; `namespace X` / `end X` lines give the prefix."""
    lines = source.split("\n")
    offsets, n = [], 0
    for line in lines:
        offsets.append(n)
        n += len(line.encode()) + 1
    spans, namespaces, i = [], [], 0
    while i < len(lines):
        line = lines[i]
        if m := re.match(r"namespace\s+(\S+)", line):
            namespaces.append(m.group(1))
        elif re.match(r"end\s+\S+", line) and namespaces:
            namespaces.pop()
        elif m := _DECL.match(line):
            j = i + 1
            while j < len(lines) and lines[j][:1] in (" ", "\t"):
                j += 1
            end = offsets[j - 1] + len(lines[j - 1].encode())
            spans.append((".".join([*namespaces, m.group(2)]), offsets[i], end))
            i = j
            continue
        i += 1
    return spans


def ast_json(source: str) -> dict:
    """The `*.ast.json` content for a Lean file's text."""
    text = source.encode()
    header = _node("Lean.Parser.Module.header")
    commands = [header] + [_theorem(text, s, e, name) for name, s, e in theorem_spans(source)]
    return {"commandASTs": [c for c in commands], "tactics": [], "premises": []}


def write_traced_files(root: Path) -> list[Path]:
    """Write `.lake/build/ir/<F>.ast.json` and `<F>.dep_paths` for every `.lean` file of the
    project at `root` (outside `.lake`), as lean-dojo's trace lays them out (utils.py:239-240)."""
    written = []
    for lean in sorted(root.rglob("*.lean")):
        rel = lean.relative_to(root)
        if rel.parts[0] == ".lake" or rel.name == "lakefile.lean":
            continue
        out = root / ".lake" / "build" / "ir" / rel.with_suffix(".ast.json")
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(ast_json(lean.read_text(encoding="utf-8"))), encoding="utf-8")
        out.with_suffix("").with_suffix(".dep_paths").write_text("", encoding="utf-8")
        written.append(out)
    return written
