"""`TheoremSpec`s from the store: what a backend needs to start or check a theorem.

The statement is the export's `theorem_statement`; LeanDojo leaves it null for some
theorems, and then it is read from the theorem's own corpus entry (its code up to `:=`).
"""

from __future__ import annotations

import re

from storage.errors import InputError

from .backend import TheoremSpec

_THEOREM_COLUMNS = [
    "repo_id",
    "theorem_id",
    "file_path",
    "full_name",
    "theorem_statement",
    "start",
    "has_sorry",
    "num_tactics",
    "split_random",
    "split_novel_premises",
]


def statement_from_code(code: str) -> str | None:
    """The declaration of a corpus entry up to its `:=`, without doc comments and attributes."""
    text = re.sub(r"/--.*?-/", "", code, flags=re.S).strip()
    text = re.sub(r"^@\[[^\]]*\]\s*", "", text)
    head, sep, _ = text.partition(":=")
    return " ".join(head.split()) if sep else None


def load_theorems(
    store,
    repo_ids: list[str] | None = None,
    *,
    full_names: list[str] | None = None,
    sorry_only: bool = False,
    split: str | None = None,
    split_kind: str = "random",
    tactic_proofs_only: bool = False,
) -> list[TheoremSpec]:
    """TheoremSpecs of the store's theorems (in store order), filtered as asked.

    `full_names` that are not in the store raise InputError naming them.
    """
    import pyarrow.compute as pc

    repos = {r["repo_id"]: r for r in store.repositories()}
    ids = sorted(repos) if repo_ids is None else list(repo_ids)
    unknown = [r for r in ids if r not in repos]
    if unknown:
        raise InputError(", ".join(unknown), "no such repository in the store", "run `dojoflow repos` to list them")
    table = store.read_table("theorems", ids, columns=_THEOREM_COLUMNS)
    if sorry_only:
        table = table.filter(pc.field("has_sorry"))
    if tactic_proofs_only:
        table = table.filter(pc.field("num_tactics") > 0)
    if split is not None:
        table = table.filter(pc.field(f"split_{split_kind}") == split)
    rows = table.to_pylist()
    if full_names is not None:
        wanted = set(full_names)
        missing = sorted(wanted - {r["full_name"] for r in rows})
        if missing:
            raise InputError(
                ", ".join(missing),
                f"no such theorem in repositories {', '.join(ids)}",
                "check the name (`dojoflow theorems` lists them) or import the repository first",
            )
        rows = [r for r in rows if r["full_name"] in wanted]
    codes = _codes(store, ids, {(r["repo_id"], r["full_name"]) for r in rows if not r["theorem_statement"]})
    out, unstated = [], []
    for r in rows:
        statement = r["theorem_statement"] or statement_from_code(codes.get((r["repo_id"], r["full_name"]), ""))
        statement = (statement or "").rstrip().removesuffix(":=").rstrip()  # some exports keep the `:=`
        if not statement:
            unstated.append(r["full_name"])  # neither the export nor its corpus says what it states
            continue
        repo = repos[r["repo_id"]]
        out.append(
            TheoremSpec(
                repo_id=r["repo_id"],
                url=repo["url"],
                commit=repo["commit"],
                file_path=r["file_path"],
                full_name=r["full_name"],
                statement=statement,
                start=tuple(r["start"]) if r["start"] else None,
            )
        )
    if full_names is not None and unstated:
        raise InputError(
            ", ".join(unstated),
            "the store does not hold the theorem's statement (no `theorem_statement` and no corpus entry)",
            "trace the repository again with lean-dojo",
        )
    return out


def theorem_spec(store, repo_id: str, full_name: str) -> TheoremSpec:
    """The TheoremSpec of one theorem; InputError when it is not in the store."""
    return load_theorems(store, [repo_id], full_names=[full_name])[0]


def _codes(store, repo_ids: list[str], wanted: set[tuple[str, str]]) -> dict[tuple[str, str], str]:
    if not wanted:
        return {}
    premises = store.read_table("premises", sorted({r for r, _ in wanted}), columns=["repo_id", "full_name", "code"])
    return {
        (p["repo_id"], p["full_name"]): p["code"] or ""
        for p in premises.to_pylist()
        if (p["repo_id"], p["full_name"]) in wanted
    }
