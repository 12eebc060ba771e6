"""The `dojoflow` command: store, tracing, and pipeline runs from the shell.

    dojoflow import PATH                    read a LeanDojo export into the store
    dojoflow export OUT [--repo URL@COMMIT] write repositories back in LeanDojo's layout
    dojoflow trace URL_OR_PATH [--commit]   trace a Lean 4 repository with lean-dojo
    dojoflow repos                          repositories in curriculum order
    dojoflow sql "SELECT ..."               read-only DuckDB query on the catalog
    dojoflow run [CONFIG.yaml]              the curriculum flow (the sample by default)
    dojoflow runs | metrics [--run ID]      what past runs did
    dojoflow import-progress FILE --name N  progress-model rows in LeanDojo-v2's JSONL format
    dojoflow samples OUT                    the sample's Lean sources as git repositories
    dojoflow migrate                        bring an older store to this version's format
    dojoflow server start|stop|status       a local Prefect server (and UI) kept between runs

The store lives in $DOJOFLOW_HOME (default `.dojoflow/` here), or `--home`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from storage.errors import DojoflowError, InputError

app = typer.Typer(add_completion=False, no_args_is_help=True, help=__doc__.split("\n\n")[0])
console = Console()
err = Console(stderr=True)

Home = Annotated[Optional[Path], typer.Option("--home", help="Dojoflow home (default: $DOJOFLOW_HOME or ./.dojoflow).")]


def _store(home, create=True):
    from storage.store import Store

    return Store.open(home, create=create)


def _fail(e: Exception) -> None:
    err.print(f"[bold red]error:[/] {e}")
    raise typer.Exit(2)


def print_table(table, title: str | None = None, max_rows: int = 200) -> None:
    """Print a pyarrow Table (or list of dicts) with rich."""
    rows = table.to_pylist() if hasattr(table, "to_pylist") else list(table)
    names = table.column_names if hasattr(table, "column_names") else (list(rows[0]) if rows else [])
    t = Table(title=title, show_lines=False)
    for n in names:
        # headers never wrap mid-word; long values (paths, ids) fold rather than vanish
        t.add_column(str(n), overflow="fold", min_width=min(len(str(n)), 12))
    for row in rows[:max_rows]:
        t.add_row(*("" if row[n] is None else (f"{row[n]:.4g}" if isinstance(row[n], float) else str(row[n])) for n in names))
    console.print(t)
    if len(rows) > max_rows:
        console.print(f"... {len(rows) - max_rows} more rows")


def resolve_repo_ids(store, specs: list[str]) -> list[str]:
    """`URL`, `URL@COMMIT` (a prefix is enough) or a repo id -> repo ids."""
    out = []
    for spec in specs:
        if store.has_repository(spec):
            out.append(spec)
            continue
        url, _, commit = spec.rpartition("@") if "@" in spec.split("/")[-1] else (spec, "", "")
        found = store.find_repositories(url or spec, commit or None)
        if not found:
            raise InputError(spec, "matches no repository in the store", "run `dojoflow repos` to see what is there")
        if len(found) > 1 and not commit:
            raise InputError(spec, f"matches {len(found)} commits", "add @COMMIT to choose one")
        out.extend(r["repo_id"] for r in found)
    return out


@app.command("import")
def import_cmd(
    path: Annotated[Path, typer.Argument(help="A LeanDojo export folder (random/, novel_premises/, corpus.jsonl ...).")],
    replace: Annotated[bool, typer.Option(help="Replace a repository stored with different content.")] = False,
    val_fraction: Annotated[float, typer.Option(help="Val share for splits the export does not carry.")] = 0.1,
    test_fraction: Annotated[float, typer.Option(help="Test share for splits the export does not carry.")] = 0.1,
    home: Home = None,
):
    """Import a LeanDojo Benchmark export: each repository in it becomes its own partition."""
    from storage.leandojo import read_export
    from storage.splits import SplitSettings

    try:
        settings = SplitSettings(val_fraction=val_fraction, test_fraction=test_fraction)
        repos = read_export(path, settings)  # validated before the store is opened (or created)
        results = _store(home).ingest(repos, replace=replace)
    except (DojoflowError, ValueError) as e:
        _fail(e)
    print_table([{"repo_id": r.repo_id, "status": r.status, **r.counts} for r in results], title=f"imported {path}")


@app.command("migrate")
def migrate_cmd(home: Home = None):
    """Bring a store written by an older Dojoflow to this version's format, one version at a time."""
    from storage.migrations import migrate

    try:
        report = migrate(home)
    except DojoflowError as e:
        _fail(e)
    if not report.steps:
        console.print(f"the store at {report.store_root} is already at format version {report.to_version}")
        return
    for line in report.steps:
        console.print(f"  {line}")
    console.print(f"migrated the store at {report.store_root} from format version {report.from_version} "
                  f"to {report.to_version}")


@app.command("export")
def export_cmd(
    out: Annotated[Path, typer.Argument(help="A new folder to write the LeanDojo export into.")],
    repo: Annotated[Optional[list[str]], typer.Option("--repo", help="URL, URL@COMMIT or repo id; repeat. Default: all.")] = None,
    home: Home = None,
):
    """Write repositories from the store in LeanDojo's layout (readable by LeanDojo tooling)."""
    from storage.leandojo import write_export

    try:
        store = _store(home, create=False)
        ids = resolve_repo_ids(store, repo) if repo else store.repo_ids()
        path = write_export(store, out, ids)
    except DojoflowError as e:
        _fail(e)
    console.print(f"wrote {len(ids)} repositories to {path}")


@app.command("trace")
def trace_cmd(
    url_or_path: Annotated[str, typer.Argument(help="A git URL or a local Lean 4 repository.")],
    commit: Annotated[Optional[str], typer.Option(help="The commit to trace (default: HEAD / the remote's default branch).")] = None,
    replace: Annotated[bool, typer.Option(help="Replace a repository stored with different content.")] = False,
    home: Home = None,
):
    """Trace a repository with lean-dojo (needs a Lean toolchain) and add it to the store."""
    from tasks.ingest import trace_and_import

    try:
        results = trace_and_import(_store(home), url_or_path, commit, replace=replace)
    except DojoflowError as e:
        _fail(e)
    print_table([{"repo_id": r.repo_id, "status": r.status, **r.counts} for r in results], title=f"traced {url_or_path}")


@app.command("repos")
def repos_cmd(home: Home = None):
    """Every repository in the store, with counts and difficulty, in curriculum order."""
    from storage.curriculum import curriculum_table

    try:
        rows = curriculum_table(_store(home, create=False))
    except DojoflowError as e:
        _fail(e)
    if not rows:
        console.print("the store holds no repositories yet: `dojoflow import PATH` or `dojoflow run`")
        return
    print_table(rows, title="repositories in curriculum order")


@app.command("samples")
def samples_cmd(
    out: Annotated[Path, typer.Argument(help="A folder to write the sample repositories into.")],
):
    """Write the sample's Lean sources as git repositories, ready for `dojoflow trace` (needs Lean)."""
    from storage.sample import write_sample_repositories

    try:
        made = write_sample_repositories(out)
    except (FileExistsError, OSError) as e:
        _fail(e)
    for path in made:
        console.print(f"{path}   dojoflow trace {path}")


@app.command("sql")
def sql_cmd(
    query: Annotated[str, typer.Argument(help="A SELECT query. Views: repositories, files, theorems, tactics, premises; tables: snapshots, checkpoints, metrics, runs.")],
    home: Home = None,
    max_rows: Annotated[int, typer.Option(help="Rows to print at most.")] = 200,
):
    """Run a read-only DuckDB query against the catalog and print the result."""
    import duckdb

    from storage import catalog

    try:
        kinds = {s.type.name for s in duckdb.extract_statements(query)}
    except duckdb.Error as e:
        _fail(InputError("query", f"does not parse: {e}", "check the SQL"))
    if kinds - {"SELECT"}:
        _fail(InputError("query", f"is a {', '.join(sorted(kinds - {'SELECT'}))} statement", "`dojoflow sql` runs read-only SELECT queries"))
    try:
        result = catalog.query(_store(home, create=False), query)
    except DojoflowError as e:
        _fail(e)
    except duckdb.Error as e:
        _fail(InputError("query", str(e).splitlines()[0], "check the SQL; `dojoflow sql \"SHOW TABLES\"` lists the tables"))
    print_table(result, max_rows=max_rows)


@app.command("run")
def run_cmd(
    config: Annotated[Optional[Path], typer.Argument(help="A YAML PipelineConfig (default: the shipped sample).")] = None,
    home: Home = None,
    max_steps: Annotated[Optional[int], typer.Option(help="Stop after this many curriculum steps.")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Show the libraries' own output (else it goes to the run's log file).")] = False,
):
    """Run the curriculum flow (ingest, order, snapshot, train, evaluate).

    Prefect server: $PREFECT_API_URL if set, else one `dojoflow server start` left running
    for this home, else a temporary one. Ctrl-C (or SIGTERM) stops the run within seconds and
    marks it cancelled; the next run resumes it. A second Ctrl-C exits at once."""
    from storage.store import dojoflow_home

    from .environment import prepare_prefect_env

    try:
        from tasks.config import PipelineConfig

        cfg = PipelineConfig.from_yaml(config) if config else PipelineConfig()
        overrides = {k: v for k, v in (("home", str(home) if home else None), ("max_steps", max_steps)) if v is not None}
        cfg = cfg.with_overrides(overrides, source="the command line")
        cfg.validate_for_run()
    except DojoflowError as e:
        _fail(e)
    resolved = dojoflow_home(cfg.home)
    cfg = cfg.model_copy(update={"home": str(resolved)})
    prepare_prefect_env(resolved)
    from .run_session import RunSession

    with RunSession(resolved, cfg.name, verbose, console) as session:
        result = session.run(cfg)
    if result is None:
        raise typer.Exit(session.exit_code)


server_app = typer.Typer(no_args_is_help=True, help="A local Prefect server kept running between runs, on this home's Prefect database.")
app.add_typer(server_app, name="server")


@server_app.command("start")
def server_start_cmd(
    home: Home = None,
    port: Annotated[int, typer.Option(help="Port on 127.0.0.1.")] = 4200,
):
    """Start Prefect's server (API and UI) on <home>/prefect, in the background; `dojoflow run`
    then uses it (no server start per run) and its UI shows every run of this home."""
    from storage.store import dojoflow_home

    from . import server as servers

    resolved = dojoflow_home(home)
    try:
        found = servers.running(resolved)
        server = found or servers.start_persistent(resolved, port)
    except DojoflowError as e:
        _fail(e)
    state = "already running" if found else "started"
    console.print(f"Prefect server {state}: {server.ui_url} (pid {server.pid}, database in {servers.prefect_home(resolved)})",
                  soft_wrap=True, markup=False)
    console.print("`dojoflow run` uses it; open the UI at that address; `dojoflow server stop` stops it",
                  soft_wrap=True, markup=False)


@server_app.command("stop")
def server_stop_cmd(home: Home = None):
    """Stop the server `dojoflow server start` started for this home."""
    from storage.store import dojoflow_home

    from . import server as servers

    stopped = servers.stop_persistent(dojoflow_home(home))
    console.print(f"stopped the Prefect server at {stopped.ui_url}" if stopped else "no Prefect server is running for this home",
                  soft_wrap=True, markup=False)


@server_app.command("status")
def server_status_cmd(home: Home = None):
    """Say whether a server started by `dojoflow server start` runs for this home (exit 1 if not)."""
    from storage.store import dojoflow_home

    from . import server as servers

    found = servers.running(dojoflow_home(home))
    if found is None:
        console.print("no Prefect server is running for this home: `dojoflow server start`", soft_wrap=True, markup=False)
        raise typer.Exit(1)
    console.print(f"Prefect server running: {found.ui_url} (pid {found.pid})", soft_wrap=True, markup=False)


@app.command("runs")
def runs_cmd(home: Home = None):
    """Past runs recorded in the catalog, newest first (status: running, completed, partial, failed)."""
    from tasks.runs import runs_table

    try:
        print_table(runs_table(_store(home, create=False)), title="runs")
    except DojoflowError as e:
        _fail(e)


@app.command("metrics")
def metrics_cmd(
    home: Home = None,
    run: Annotated[Optional[str], typer.Option(help="A run id or prefix from `dojoflow runs` (default: the newest run with metrics).")] = None,
    trainer: Annotated[Optional[str], typer.Option(help="Only this trainer.")] = None,
    split: Annotated[Optional[str], typer.Option(help="Only this split (val, test).")] = None,
):
    """Metrics of one run per step, repository, trainer and split (what the UI report shows)."""
    from tasks.runs import metrics_table, resolve_run

    try:
        store = _store(home, create=False)
        run_id = resolve_run(store, run)
        if run_id is None:
            console.print("no run has recorded metrics yet: `dojoflow run`")
            return
        print_table(metrics_table(store, run_id, trainer, split), title=f"metrics of run {run_id}")
    except DojoflowError as e:
        _fail(e)


@app.command("import-progress")
def import_progress_cmd(
    path: Annotated[Path, typer.Argument(help="JSONL with one {goal, prefix, tactic, steps_remaining} object per line (LeanDojo-v2's progress format).")],
    name: Annotated[str, typer.Option("--name", help="Dataset name; list it in trainers.progress.extra_datasets to train on it.")],
    home: Home = None,
):
    """Import proof-progress rows into the store (<home>/store/progress/NAME.parquet); nothing is written if a line is bad."""
    from tasks.progress.imported import import_progress_jsonl

    try:
        store = _store(home)
        with store.writer():
            result = import_progress_jsonl(path, store.root, name)
    except DojoflowError as e:
        _fail(e)
    console.print(f"{result['status']}: progress dataset {result['name']!r}, {result['rows']} rows -> {result['path']}")
    if result["status"] == "added":
        console.print(f"train on it: trainers.progress.extra_datasets: [{result['name']}]")


def main() -> None:  # pragma: no cover
    app()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(app())
