"""`dojoflow export-proofs OUT`: the verified proofs in the store as a dataset that
`datasets.load_dataset(OUT)` reads: `data/train-00000-of-00001.parquet` and a dataset card
(README.md, its YAML header naming the data files and the features).

A row: statement_id, set (the statement set, or the repository for proofs expert iteration found in
one), name, header, statement (ending in `:=`), proof (the text after it), verdict_level, toolchain,
checker, model, checkpoint_id, run_id, round, origin (`claimed`: shipped with a set and accepted by a
verdict; `search`: found by a model; `expert_iteration`: found_proofs). Only verdicts: never a claimed
proof no verdict accepted, never a `replay` answer. Proofs of statement sets marked
`publish_proofs: false` are counted in the card, never written.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from storage import atomic
from storage.errors import InputError
from storage.statement_sets import statement_id, verified_proofs

SCHEMA = pa.schema(
    [
        ("statement_id", pa.string()),
        ("set", pa.string()),
        ("name", pa.string()),
        ("header", pa.string()),
        ("statement", pa.string()),
        ("proof", pa.string()),
        ("verdict_level", pa.string()),
        ("toolchain", pa.string()),
        ("checker", pa.string()),
        ("model", pa.string()),
        ("checkpoint_id", pa.string()),
        ("run_id", pa.string()),
        ("round", pa.int64()),
        ("origin", pa.string()),
    ]
)
DATA_FILE = "data/train-00000-of-00001.parquet"


def _unpublished_fingerprints(store) -> set[str]:
    from storage.statement_sets import list_sets, read_statements

    names = [m["name"] for m in list_sets(store) if m.get("publish_proofs") is False]
    return (
        set(read_statements(store, names, columns=["fingerprint"]).column("fingerprint").to_pylist())
        if names
        else set()
    )


def _found_rows(store) -> tuple[list[dict], int]:
    """Expert iteration's found proofs of repositories' theorems, in the export's shape, and how many
    were withheld: a repository theorem stating what an unpublished benchmark states is withheld too."""
    from storage.contamination import fingerprint
    from storage.found_proofs import read_found

    found = read_found(store)
    if not found:
        return [], 0
    hidden, withheld = _unpublished_fingerprints(store), 0
    ids = sorted({f["repo_id"] for f in found if store.has_repository(f["repo_id"])})
    theorems = store.read_table("theorems", ids, columns=["theorem_id", "theorem_statement"]).to_pylist() if ids else []
    statements = {t["theorem_id"]: t["theorem_statement"] for t in theorems}
    out = []
    for f in found:
        stated = statements.get(f["theorem_id"])
        if not stated:
            continue
        statement = stated.rstrip().removesuffix(":=").rstrip() + " :="
        if hidden and fingerprint(statement) in hidden:
            withheld += 1
            continue
        out.append(
            {
                "statement_id": statement_id(statement, ""),
                "set": f["repo_id"],
                "name": f["full_name"],
                "header": "",
                "statement": statement,
                "proof": f["proof"],
                "verdict_level": f.get("verdict_level") or "elaborator-checked",
                "toolchain": f["toolchain"],
                "checker": f["checker"],
                "model": None,
                "checkpoint_id": f["checkpoint_id"],
                "run_id": f["run_id"],
                "round": f["round"],
                "origin": "expert_iteration",
            }
        )
    return out, withheld


def export_proofs(store, out: Path, sets: list[str] | None = None) -> dict:
    """Write the dataset into the new folder `out`; {path, written, withheld}."""
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise InputError(out, "exists and is not an empty folder", "give a new folder")
    rows, withheld = [], 0
    for p in verified_proofs(store, sets, split=None):
        if not p["publish_proofs"]:
            withheld += 1
            continue
        rows.append({c: p.get(c) for c in SCHEMA.names})
    if sets is None:
        found, hidden = _found_rows(store)
        rows += found
        withheld += hidden
    table = pa.Table.from_pylist(rows, schema=SCHEMA)
    with atomic.atomic_path(out) as tmp:
        (tmp / "data").mkdir(parents=True)
        pq.write_table(table, tmp / DATA_FILE, compression="zstd")
        (tmp / "README.md").write_text(card(table, withheld, sets), encoding="utf-8")
    return {"path": str(out), "written": table.num_rows, "withheld": withheld}


def card(table: pa.Table, withheld: int, sets: list[str] | None) -> str:
    features = "\n".join(
        f"  - name: {f.name}\n    dtype: {'int64' if pa.types.is_integer(f.type) else 'string'}" for f in SCHEMA
    )
    levels = {}
    for v in table.column("verdict_level").to_pylist():
        levels[v] = levels.get(v, 0) + 1
    checkers = sorted({c for c in table.column("checker").to_pylist() if c})
    toolchains = sorted({c for c in table.column("toolchain").to_pylist() if c})
    return f"""---
configs:
- config_name: default
  data_files:
  - split: train
    path: {DATA_FILE}
dataset_info:
  features:
{features}
  splits:
  - name: train
    num_bytes: {table.nbytes}
    num_examples: {table.num_rows}
---

# Verified Lean 4 proofs exported by Dojoflow

{table.num_rows} proofs that a Lean verdict accepted ({", ".join(f"{n} {k}" for k, n in sorted(levels.items())) or "none"};
checkers: {", ".join(checkers) or "none"}; toolchains: {", ".join(toolchains) or "none"}),
{"of the statement sets " + ", ".join(sets) if sets else "of every statement set and repository in the store"}.
Never a proof a set only claimed, never a `replay` answer (traced data, not Lean).
{f"{withheld} more proofs are of sets marked `publish_proofs: false` and are not written here." if withheld else ""}

Columns: `statement_id` (the fingerprint of the normalised statement and header), `set`, `name`,
`header`, `statement` (ends in `:=`), `proof` (the text after it; Lean checks `header` + `statement`
+ ` ` + `proof`), `verdict_level` (`kernel-replayed` or `elaborator-checked`), `toolchain`,
`checker`, `model`, `checkpoint_id`, `run_id`, `round`, `origin`.

    import datasets
    ds = datasets.load_dataset("path/to/this/folder", split="train")

{json.dumps({"rows": table.num_rows, "withheld": withheld})}
"""
