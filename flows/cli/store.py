"""`dojoflow import|export|trace|repos|samples|sql|migrate|repair|import-progress`: the store from the shell."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, NoReturn, Optional

import typer

from storage.errors import DojoflowError
from storage.repo_specs import resolve_repositories

from .common import FormatOption, Home, Repositories, UnsafeNoSandbox, command, fail_exit, home_of, store_of
from .output import emit, fail, say

# `import` and `trace`: what to do when a repository is already stored with other content.
Replace = Annotated[bool, typer.Option(help="Replace a repository stored with different content.")]


def _added_rows(results) -> list[dict]:
    return [{"repo_id": r.repo_id, "status": r.status, **r.counts} for r in results]


@command("import")
def import_cmd(
    paths: Annotated[
        list[Path],
        typer.Argument(
            help="LeanDojo export folders (random/, novel_premises/, corpus.jsonl ...); "
            "several are imported together, in one commit."
        ),
    ],
    replace: Replace = False,
    val_fraction: Annotated[float, typer.Option(help="Val share for splits the export does not carry.")] = 0.1,
    test_fraction: Annotated[float, typer.Option(help="Test share for splits the export does not carry.")] = 0.1,
    home: Home = None,
    fmt: FormatOption = None,
    memory_mb: Annotated[
        int, typer.Option(min=16, help="Memory the import may use for its batches, in MiB (it streams).")
    ] = 256,
):
    """Import LeanDojo Benchmark exports: each repository in them becomes its own partition."""
    from storage.leandojo import staged_exports
    from storage.splits import SplitSettings
    from tasks.command_options import from_options

    settings = from_options(
        SplitSettings,
        {"val_fraction": ("--val-fraction", val_fraction), "test_fraction": ("--test-fraction", test_fraction)},
    )
    # validated (and staged in a temporary folder) before the store is opened (or created)
    with staged_exports(paths, settings, memory_mb) as repos:
        results = store_of(home).ingest(repos, replace=replace)
    title = f"imported {paths[0]}" if len(paths) == 1 else f"imported {len(paths)} exports"
    emit(_added_rows(results), fmt, title=title)


@command("migrate")
def migrate_cmd(home: Home = None):
    """Bring a store written by an older Dojoflow to this version's format, one version at a time."""
    from storage.migrations import migrate

    report = migrate(home_of(home))
    if not report.steps:
        say("the store at {} is already at format version {}", report.store_root, report.to_version)
        return
    for line in report.steps:
        say("  {}", line)
    say(
        "migrated the store at {} from format version {} to {}",
        report.store_root,
        report.from_version,
        report.to_version,
    )


@command("repair")
def repair_cmd(home: Home = None):
    """Rebuild a damaged catalog from the store's Parquet files; drop unreadable repositories.

    Keeps every record table (checkpoints, metrics, runs, proofs) it can still read, and
    names each one it could not (docs/runs.md)."""
    from storage.repair import repair

    report = repair(home_of(home))
    if report.old_catalog:
        say("the previous catalog was moved to {}", report.old_catalog)
    for table, rows in report.kept.items():
        say("kept {}: {} rows", table, rows)
    for table, why in report.lost.items():
        say("[bold red]lost[/] {}: {}", table, why)
    for repo_id, why in report.removed.items():
        say("[bold red]removed[/] repository {} ({}): import it again", repo_id, why)
    say("rebuilt the catalog of the store at {}", report.store_root)


@command("export")
def export_cmd(
    out: Annotated[Path, typer.Argument(help="A new folder to write the LeanDojo export into.")],
    repo: Repositories = None,
    home: Home = None,
):
    """Write repositories from the store in LeanDojo's layout (readable by LeanDojo tooling)."""
    from storage.leandojo import write_export

    store = store_of(home, create=False)
    ids = resolve_repositories(store, repo or [])
    path = write_export(store, out, ids)
    say("wrote {} repositories to {}", len(ids), path)


@command("trace")
def trace_cmd(
    url_or_path: Annotated[str, typer.Argument(help="A git URL or a local Lean 4 repository.")],
    commit: Annotated[
        Optional[str], typer.Option(help="The commit to trace (default: HEAD / the remote's default branch).")
    ] = None,
    replace: Replace = False,
    unsafe_no_sandbox: UnsafeNoSandbox = False,
    home: Home = None,
    fmt: FormatOption = None,
):
    """Trace a repository with lean-dojo (needs a Lean toolchain) and add it to the store."""
    from tasks.ingest import trace_and_import

    options = {"sandbox": {"unsafe_no_sandbox": True}} if unsafe_no_sandbox else None
    resolved = home_of(home)
    results = trace_and_import(
        lambda: store_of(resolved), url_or_path, commit, replace=replace, home=resolved, trace_options=options
    )
    emit(_added_rows(results), fmt, title=f"traced {url_or_path}")


REPOS_TABLE = {  # what fits 80 columns; csv and json carry every column
    "#": lambda r: r["#"],
    "repository": lambda r: r["name"],
    "commit": lambda r: r["commit"][:7],
    "theorems": lambda r: r["theorems"],
    "tactics": lambda r: r["tactics"],
    "easy/med/hard": lambda r: f"{r['easy']}/{r['medium']}/{r['hard']}",
    "easy share": lambda r: r["easy share"],
}


@command("repos")
def repos_cmd(home: Home = None, fmt: FormatOption = None):
    """Every repository in the store, with counts and difficulty, in curriculum order."""
    from storage.curriculum import curriculum_table

    rows = curriculum_table(store_of(home, create=False))
    if not rows:
        say("the store holds no repositories yet: `dojoflow import PATH` or `dojoflow run`")
        return
    emit(rows, fmt, title="repositories in curriculum order", table_columns=REPOS_TABLE)


@command("samples")
def samples_cmd(
    out: Annotated[Path, typer.Argument(help="A folder to write the sample repositories into.")],
):
    """Write the sample's Lean sources as git repositories, ready for `dojoflow trace` (needs Lean)."""
    from storage.sample import write_sample_repositories

    try:
        made = write_sample_repositories(out)
    except (FileExistsError, OSError) as e:
        fail_exit(e)
    for path in made:
        say("{}   dojoflow trace {}", path, path)


@command("sql")
def sql_cmd(
    query: Annotated[
        str,
        typer.Argument(
            help="A SELECT query. Views: repositories, files, theorems, tactics, premises, snapshots, ledger, theorem_ledger, statements, statement_sets; tables: checkpoints, metrics, runs, proofs, theorem_results, statement_proofs."
        ),
    ],
    home: Home = None,
    max_rows: Annotated[int, typer.Option(help="Rows to print at most.")] = 200,
    time_limit: Annotated[
        Optional[float],
        typer.Option("--time-limit", help="Seconds a query may run before it is interrupted (default 60)."),
    ] = None,
    fmt: FormatOption = None,
):
    """Run a read-only DuckDB query against the catalog and print the result.

    The query can read the catalog and the store's own files, nothing else, for at most
    --time-limit seconds (docs/cli.md)."""
    from storage.user_query import DEFAULT_TIME_LIMIT_S, check_read_only, check_time_limit, run_query

    limit = DEFAULT_TIME_LIMIT_S if time_limit is None else time_limit
    check_time_limit(limit)
    check_read_only(query)
    result = run_query(store_of(home, create=False), query, limit, on_stuck=_exit_now)
    emit(result.to_pylist(), fmt, max_rows=max_rows)


def _exit_now(error: DojoflowError) -> NoReturn:
    """A query that ignores DuckDB's interrupt keeps running in its thread: say so and end the
    process (its lock goes with it; storage/user_query.py)."""
    fail(error)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(2)


@command("import-progress")
def import_progress_cmd(
    path: Annotated[
        Path,
        typer.Argument(
            help="JSONL with one {goal, prefix, tactic, steps_remaining} object per line (LeanDojo-v2's progress format)."
        ),
    ],
    name: Annotated[
        str, typer.Option("--name", help="Dataset name; list it in trainers.progress.extra_datasets to train on it.")
    ],
    home: Home = None,
):
    """Import proof-progress rows into the store (<home>/store/progress/NAME.parquet); nothing is written if a line is bad."""
    from tasks.progress.imported import check_name, import_progress_jsonl

    check_name(name)  # before the store is created
    store = store_of(home)
    with store.writer():
        result = import_progress_jsonl(path, store.root, name)
    say(
        "{}: progress dataset {}, {} rows -> {}", result["status"], repr(result["name"]), result["rows"], result["path"]
    )
    if result["status"] == "added":
        say("train on it: trainers.progress.extra_datasets: [{}]", result["name"])
