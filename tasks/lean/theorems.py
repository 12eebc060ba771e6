"""`TheoremSpec`s from the store: what a backend needs to start or check a theorem.

The statement is the export's `theorem_statement`; LeanDojo leaves it null for some
theorems (the LeanDojo Benchmark's own files have none at all), and then it is read from
the theorem's own corpus entry (its code up to `:=`), else, given the repositories'
checkouts (`projects`), from the traced file's source at the theorem's position. The
replay backend needs no statement (`need_statement=False`). A theorem left without one is
not dropped silently: its name and the reason go to `untried`.
"""

from __future__ import annotations

from storage.contamination import statement_from_code  # one rule for a declaration's statement
from storage.errors import InputError, some_names
from storage.lean_text import is_statement

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


def load_theorems(
    store,
    repo_ids: list[str] | None = None,
    *,
    full_names: list[str] | None = None,
    sorry_only: bool = False,
    split: str | None = None,
    split_kind: str = "random",
    tactic_proofs_only: bool = False,
    need_statement: bool = True,
    projects: dict[str, str] | None = None,
    untried: list[dict[str, str | None]] | None = None,
) -> list[TheoremSpec]:
    """TheoremSpecs of the store's theorems (in store order), filtered as asked.

    `full_names` that are not in the store raise InputError naming them. Without
    `full_names`, theorems whose statement cannot be found (and `need_statement`) are left
    out and described in `untried` (repo_id, file_path, full_name, split, reason).
    """
    repos = {r["repo_id"]: r for r in store.repositories()}
    ids = sorted(repos) if repo_ids is None else list(repo_ids)
    rows = _selected_rows(
        store,
        repos,
        ids,
        full_names,
        sorry_only=sorry_only,
        split=split,
        split_kind=split_kind,
        tactic_proofs_only=tactic_proofs_only,
    )
    codes = _codes(store, ids, {(r["repo_id"], r["full_name"]) for r in rows if not r["theorem_statement"]})
    sources = _SourceReader(repos, projects) if projects is not None else None
    out, unstated = [], []
    for r in rows:
        statement = r["theorem_statement"] or statement_from_code(codes.get((r["repo_id"], r["full_name"]), ""))
        if not statement and sources is not None:
            statement = sources.statement(r)
        statement = (statement or "").rstrip().removesuffix(":=").rstrip()  # some exports keep the `:=`
        if not statement and need_statement:
            unstated.append(r["full_name"])  # neither the export, its corpus nor its source says what it states
            if untried is not None:
                untried.append(_untried_row(r, split_kind, has_checkouts=sources is not None))
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


def _selected_rows(store, repos, ids, full_names, *, sorry_only, split, split_kind, tactic_proofs_only) -> list[dict]:
    """The theorem rows of repositories `ids` that pass the filters; unknown repositories or names raise."""
    import pyarrow.compute as pc

    unknown = [r for r in ids if r not in repos]
    if unknown:
        raise InputError(some_names(unknown), "no such repository in the store", "run `dojoflow repos` to list them")
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
                some_names(missing),
                f"no such theorem in repositories {', '.join(ids)}",
                "check the name (`dojoflow theorems` lists them) or import the repository first",
            )
        rows = [r for r in rows if r["full_name"] in wanted]
    return rows


def _untried_row(row: dict, split_kind: str, *, has_checkouts: bool) -> dict[str, str | None]:
    """What `untried` says of a theorem whose statement no source gave."""
    where = "its file in the checkout" if has_checkouts else "a checkout (none configured)"
    return {
        **{k: row[k] for k in ("repo_id", "file_path", "full_name")},
        "split": row[f"split_{split_kind}"],
        "reason": f"no statement: none in the export, its corpus entry or {where}",
    }


def statement_from_source(text: str, start: tuple[int, int]) -> str | None:
    """The declaration starting at `start` (1-based line, column) of a file's text, up to its `:=`."""
    from .source import lean_lines

    lines = lean_lines(text)  # numbered as Lean numbers them (LF only), as `start` is
    line, column = start
    if not 1 <= line <= len(lines):
        return None
    rest = lines[line - 1][max(column - 1, 0) :] + "".join(lines[line:])
    return statement_from_code(rest)


class _SourceReader:
    """Reads statements from the traced files in the repositories' checkouts, each file once."""

    def __init__(self, repos: dict, projects: dict[str, str]):
        self.repos, self.projects, self.texts = repos, projects, {}

    def statement(self, row: dict) -> str | None:
        from .source import project_dir

        repo = self.repos[row["repo_id"]]
        spec = TheoremSpec(row["repo_id"], repo["url"], repo["commit"], row["file_path"], row["full_name"], "")
        key = (row["repo_id"], row["file_path"])
        if key not in self.texts:
            try:
                self.texts[key] = (project_dir(spec, self.projects, "projects") / row["file_path"]).read_text("utf-8")
            except (InputError, OSError):
                self.texts[key] = None  # no checkout or no such file: the theorem stays untried, with the reason
        text = self.texts[key]
        found = statement_from_source(text, tuple(row["start"])) if text and row["start"] else None
        return found if is_statement(found, row["full_name"]) else None  # the import's rule: one signature, of it


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
