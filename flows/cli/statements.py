"""`dojoflow import-statements|leaderboard|export-proofs`: statement sets, results in the benchmarks'
own terms, and verified proofs as a dataset (docs/statement-sets.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from storage.errors import InputError

from .common import FormatOption, Home, command, store_of
from .output import emit, say


def _columns(pairs: list[str]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        field, sep, column = pair.partition("=")
        if not sep or not field or not column:
            raise InputError(f"--column {pair}", "is not FIELD=COLUMN", "e.g. --column statement=formal_statement")
        out[field.strip()] = column.strip()
    return out


@command("import-statements")
def import_statements_cmd(
    path: Annotated[
        str,
        typer.Argument(
            help="A file (.jsonl .json .parquet .arrow .csv .lean), a folder (a saved "
            "dataset, data files, PutnamBench's .lean files) or a hub dataset id."
        ),
    ],
    name: Annotated[Optional[str], typer.Option(help="The set's name (default: the file's stem).")] = None,
    preset: Annotated[
        Optional[str],
        typer.Option(
            help="deepseek, lean_grpo, putnambench, putnam_jsonl, numina, goedel or table "
            "(default: the one whose columns the file has)."
        ),
    ] = None,
    column: Annotated[
        Optional[list[str]],
        typer.Option(
            "--column",
            help="FIELD=COLUMN: which column holds "
            "name, statement, header, split, informal, proof, source or "
            "lean_version; repeat.",
        ),
    ] = None,
    split: Annotated[
        Optional[str],
        typer.Option(
            help="Read one split only (of a hub dataset or saved DatasetDict, or the rows whose split column says it): e.g. --split test for miniF2F-test."
        ),
    ] = None,
    lean_version: Annotated[Optional[str], typer.Option(help="The Lean version the set was written for.")] = None,
    mathlib_version: Annotated[Optional[str], typer.Option(help="The Mathlib version (tag or commit).")] = None,
    benchmark: Annotated[
        bool, typer.Option(help="An evaluation set: never trained on; reported as leaderboard lines.")
    ] = False,
    publish_proofs: Annotated[
        bool,
        typer.Option(help="--no-publish-proofs: no proof text of this set leaves the store (PutnamBench asks it)."),
    ] = True,
    import_root: Annotated[
        Optional[list[str]],
        typer.Option("--import-root", help="A module root headers may import beyond Lean's and Mathlib's; repeat."),
    ] = None,
    replace: Annotated[bool, typer.Option(help="Replace a set stored under this name with other content.")] = False,
    home: Home = None,
    fmt: FormatOption = None,
):
    """Import a statement set (formal statements, optional proofs) into the store, in one commit."""
    from storage.statement_sets.reader import StatementSetConfig

    config = StatementSetConfig(
        path=path,
        name=name,
        preset=preset,
        columns=_columns(column or []),
        split=split,
        lean_version=lean_version,
        mathlib_version=mathlib_version,
        benchmark=benchmark,
        publish_proofs=publish_proofs,
        extra_import_roots=import_root or [],
    )
    from storage.statement_sets.reader import read_set, summary
    from storage.statement_sets.sets import add_set

    table, meta = read_set(config)  # checked whole before the store is opened (or created)
    store = store_of(home)
    with store.writer():
        status = add_set(store, meta, table, replace=replace)
    emit([summary(store, config, table, meta, status)], fmt, title=f"imported {path}")


@command("leaderboard")
def leaderboard_cmd(
    benchmark: Annotated[Optional[str], typer.Option(help="Only this benchmark (its name).")] = None,
    run: Annotated[Optional[str], typer.Option("--run", help="Only this run.")] = None,
    home: Home = None,
    fmt: FormatOption = None,
):
    """One line per run and benchmark, as the field reports it: solved/total, pass@k with the sample
    budget, the verdict level, Lean and Mathlib, the model and checkpoint."""
    from tasks.leaderboard import leaderboard_rows

    rows = leaderboard_rows(store_of(home, create=False), benchmark=benchmark, run_id=run)
    if not rows:
        say("no benchmark results yet: evaluate on a benchmark (a statement set imported with --benchmark)")
        return
    if fmt is None or fmt.value == "table":
        for r in rows:
            say("{}", r["line"])
        return
    emit(rows, fmt)


@command("export-proofs")
def export_proofs_cmd(
    out: Annotated[Path, typer.Argument(help="A new folder to write the dataset into (Parquet and README.md).")],
    set_: Annotated[
        Optional[list[str]], typer.Option("--set", help="Only proofs of this statement set; repeat.")
    ] = None,
    home: Home = None,
):
    """Write verified proofs as a dataset (`datasets.load_dataset(OUT)` reads it); proofs of sets marked
    publish_proofs: false are counted in the card, never written."""
    from tasks.export_proofs import export_proofs

    report = export_proofs(store_of(home, create=False), out, sets=set_)
    say("wrote {} verified proofs to {}", report["written"], report["path"])
    if report["withheld"]:
        say("withheld {} proofs of sets that do not publish proofs (counted in README.md)", report["withheld"])


@command("verify-statements")
def verify_statements_cmd(
    set_name: Annotated[str, typer.Argument(help="The statement set whose claimed proofs to check.")],
    kimina_url: Annotated[str, typer.Option("--kimina-url", help="A kimina-lean-server to check with.")],
    lean_version: Annotated[
        Optional[str],
        typer.Option(help="The Lean version the server runs (refused if the set was written for another)."),
    ] = None,
    home: Home = None,
):
    """Check a set's claimed proofs with Lean (a kimina server, under the set's header); the accepted
    ones become verified proofs that training may use."""
    from storage.statement_sets import claimed_proofs
    from tasks.lean import open_backend
    from tasks.lean.closing import close_quickly
    from tasks.lean.config import BackendSettings
    from tasks.statement_sets import verify_claimed

    store = store_of(home, create=False)
    from storage.statement_sets import check_toolchain

    check_toolchain(store, set_name, lean_version)  # before any server is contacted
    rows = claimed_proofs(store, [set_name])
    header = rows[0]["header"] if rows else ""
    settings = BackendSettings(kind="kimina", kimina={"url": kimina_url, "header": header or "import Init"})
    backend = open_backend(settings, store)
    try:
        report = verify_claimed(store, set_name, backend, lean_version)
    finally:
        close_quickly(backend)  # without LeanInteract's full collections (tasks/lean/closing.py)
    say("checked {} claimed proofs of {}: {} verified", report["checked"], set_name, report["verified"])
    for name, why in report["rejected"]:
        say("  not accepted: {} ({})", name, why)
