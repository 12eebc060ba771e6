"""The `dojoflow` command: store, tracing, and pipeline runs from the shell.

    dojoflow import PATH...                 read LeanDojo exports into the store (one commit)
    dojoflow export OUT [--repo URL@COMMIT] write repositories back in LeanDojo's layout
    dojoflow trace URL_OR_PATH [--commit]   trace a Lean 4 repository with lean-dojo
    dojoflow repos                          repositories in curriculum order
    dojoflow sql "SELECT ..."               read-only DuckDB query on the catalog
    dojoflow run [CONFIG.yaml]              the curriculum flow (the sample by default)
    dojoflow runs [--run ID]                what past runs did (and their checkpoints)
    dojoflow metrics [--run ID]             a run's metrics per step, trainer, repository, split
    dojoflow import-progress FILE --name N  progress-model rows in LeanDojo-v2's JSONL format
    dojoflow samples OUT                    the sample's Lean sources as git repositories
    dojoflow prove [--repo R] [--checkpoint C] [CONFIG]   prove `sorry` theorems, write patches
    dojoflow migrate                        bring an older store to this version's format
    dojoflow repair                         rebuild a damaged catalog; drop unreadable repositories
    dojoflow server start|stop|status       a local Prefect server (and UI) kept between runs

The store lives in $DOJOFLOW_HOME (default `.dojoflow/` here), or `--home`. Listings
print a table on a terminal and CSV when piped (`--format table|csv|json`, docs/cli.md).
Every error is one line naming the input and the fix, with exit code 2.
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from pydantic import ValidationError

from storage.errors import DojoflowError, InputError

from .output import Format, console, emit, fail, plain, say, say_line

app = typer.Typer(add_completion=False, no_args_is_help=True, help=__doc__.split("\n\n")[0])
app.add_typer(__import__("flows.grpo_cli", fromlist=["app"]).app, name="grpo")  # dojoflow grpo ... (flows/grpo_cli.py)
app.command("doctor")(__import__("flows.doctor_cli", fromlist=["doctor_cmd"]).doctor_cmd)  # flows/doctor_cli.py

UnsafeNoSandbox = Annotated[
    bool,
    typer.Option(
        "--unsafe-no-sandbox",
        help="UNSAFE: run Lean without bubblewrap (where it cannot run). Lean then runs the repository's and the "
        "model's code as you, with your files and network.",
    ),
]
Home = Annotated[Optional[Path], typer.Option("--home", help="Dojoflow home (default: $DOJOFLOW_HOME or ./.dojoflow).")]
FormatOption = Annotated[
    Optional[Format],
    typer.Option("--format", help="table (the default on a terminal), csv (the default when piped) or json."),
]


def command(name: str | None = None):
    """`app.command`, and every DojoflowError becomes one line and exit code 2."""

    def wrap(fn):
        @functools.wraps(fn)
        def run(*args, **kwargs):
            try:
                return fn(*args, **kwargs)
            except DojoflowError as e:
                _fail(e)

        return app.command(name)(run)

    return wrap


def from_options(model, options: dict[str, tuple[str, object]]):
    """`model(**values)` from command-line options ({field: (option, value)}); a value the
    model refuses is an InputError naming the option, not a pydantic dump."""
    try:
        return model(**{field: value for field, (_, value) in options.items()})
    except ValidationError as e:
        first = e.errors()[0]
        field = str(first["loc"][0]) if first["loc"] else ""
        problem = first["msg"].removeprefix("Value error, ")
        if field in options:
            option, value = options[field]
            raise InputError(f"{option} {value}", problem, f"change {option}") from e
        raise InputError(", ".join(f"{o} {v}" for o, v in options.values()), problem, "change them") from e


def _fail(e: Exception) -> None:
    fail(e)
    raise typer.Exit(2)


def _home(home):
    """The resolved home; an existing non-folder on the way is a clean error."""
    from storage.paths import check_folder_path
    from storage.store import dojoflow_home

    resolved = dojoflow_home(home)
    return check_folder_path(
        resolved,
        home if home is not None else f"DOJOFLOW_HOME={resolved}",
        "give --home (or DOJOFLOW_HOME) a folder, new or holding a Dojoflow home",
    )


def _store(home, create=True):
    from storage.store import Store

    return Store.open(_home(home), create=create)


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
    replace: Annotated[bool, typer.Option(help="Replace a repository stored with different content.")] = False,
    val_fraction: Annotated[float, typer.Option(help="Val share for splits the export does not carry.")] = 0.1,
    test_fraction: Annotated[float, typer.Option(help="Test share for splits the export does not carry.")] = 0.1,
    home: Home = None,
    fmt: FormatOption = None,
):
    """Import LeanDojo Benchmark exports: each repository in them becomes its own partition."""
    from storage.leandojo import read_exports
    from storage.splits import SplitSettings

    settings = from_options(
        SplitSettings,
        {"val_fraction": ("--val-fraction", val_fraction), "test_fraction": ("--test-fraction", test_fraction)},
    )
    repos = read_exports(paths, settings)  # validated before the store is opened (or created)
    results = _store(home).ingest(repos, replace=replace)
    title = f"imported {paths[0]}" if len(paths) == 1 else f"imported {len(paths)} exports"
    emit(_added_rows(results), fmt, title=title)


@command("migrate")
def migrate_cmd(home: Home = None):
    """Bring a store written by an older Dojoflow to this version's format, one version at a time."""
    from storage.migrations import migrate

    report = migrate(_home(home))
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

    report = repair(_home(home))
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
    repo: Annotated[
        Optional[list[str]], typer.Option("--repo", help="URL, URL@COMMIT or repo id; repeat. Default: all.")
    ] = None,
    home: Home = None,
):
    """Write repositories from the store in LeanDojo's layout (readable by LeanDojo tooling)."""
    from storage.leandojo import write_export

    store = _store(home, create=False)
    ids = resolve_repo_ids(store, repo) if repo else store.repo_ids()
    path = write_export(store, out, ids)
    say("wrote {} repositories to {}", len(ids), path)


@command("trace")
def trace_cmd(
    url_or_path: Annotated[str, typer.Argument(help="A git URL or a local Lean 4 repository.")],
    commit: Annotated[
        Optional[str], typer.Option(help="The commit to trace (default: HEAD / the remote's default branch).")
    ] = None,
    replace: Annotated[bool, typer.Option(help="Replace a repository stored with different content.")] = False,
    unsafe_no_sandbox: UnsafeNoSandbox = False,
    home: Home = None,
    fmt: FormatOption = None,
):
    """Trace a repository with lean-dojo (needs a Lean toolchain) and add it to the store."""
    from tasks.ingest import trace_and_import

    options = {"sandbox": {"unsafe_no_sandbox": True}} if unsafe_no_sandbox else None
    results = trace_and_import(_store(home), url_or_path, commit, replace=replace, trace_options=options)
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

    rows = curriculum_table(_store(home, create=False))
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
        _fail(e)
    for path in made:
        say("{}   dojoflow trace {}", path, path)


@command("sql")
def sql_cmd(
    query: Annotated[
        str,
        typer.Argument(
            help="A SELECT query. Views: repositories, files, theorems, tactics, premises, snapshots; tables: checkpoints, metrics, runs, proofs."
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
    result = run_query(_store(home, create=False), query, limit)
    emit(result.to_pylist(), fmt, max_rows=max_rows)


@app.command("run")
def run_cmd(
    config: Annotated[
        Optional[Path], typer.Argument(help="A YAML PipelineConfig (default: the shipped sample).")
    ] = None,
    home: Home = None,
    max_steps: Annotated[Optional[int], typer.Option(help="Stop after this many curriculum steps.")] = None,
    verbose: Annotated[
        bool,
        typer.Option("--verbose", "-v", help="Show the libraries' own output (else it goes to the run's log file)."),
    ] = False,
):
    """Run the curriculum flow (ingest, order, snapshot, train, evaluate).

    Prefect server: $PREFECT_API_URL if set, else one `dojoflow server start` left running
    for this home, else a temporary one. Ctrl-C (or SIGTERM) stops the run within seconds and
    marks it cancelled; the next run resumes it. A second Ctrl-C exits at once."""
    from .environment import prepare_prefect_env

    try:
        from tasks.config import PipelineConfig

        cfg = PipelineConfig.from_yaml(config) if config else PipelineConfig()
        overrides = {
            k: v for k, v in (("home", str(home) if home else None), ("max_steps", max_steps)) if v is not None
        }
        cfg = cfg.with_overrides(overrides, source="the command line")
        cfg.validate_for_run(warn=lambda line: say_line(f"warning: {line}"))
        resolved = _home(cfg.home)
    except DojoflowError as e:
        _fail(e)
    cfg = cfg.model_copy(update={"home": str(resolved)})
    prepare_prefect_env(resolved)
    from .run_session import RunSession

    with RunSession(resolved, cfg.name, verbose, console) as session:
        result = session.run(cfg)
    if result is None:
        raise typer.Exit(session.exit_code)


server_app = typer.Typer(
    no_args_is_help=True, help="A local Prefect server kept running between runs, on this home's Prefect database."
)
app.add_typer(server_app, name="server")


@server_app.command("start")
def server_start_cmd(
    home: Home = None,
    port: Annotated[int, typer.Option(help="Port on 127.0.0.1.")] = 4200,
):
    """Start Prefect's server (API and UI) on <home>/prefect, in the background; `dojoflow run`
    then uses it (no server start per run) and its UI shows every run of this home."""
    from . import server as servers

    resolved = _home(home)
    try:
        found = servers.running(resolved)
        server = found or servers.start_persistent(resolved, port)
    except DojoflowError as e:
        _fail(e)
    state = "already running" if found else "started"
    console.print(
        f"Prefect server {state}: {server.ui_url} (pid {server.pid}, database in {servers.prefect_home(resolved)})",
        soft_wrap=True,
        markup=False,
    )
    console.print(
        "`dojoflow run` uses it; open the UI at that address; `dojoflow server stop` stops it",
        soft_wrap=True,
        markup=False,
    )


@server_app.command("stop")
def server_stop_cmd(home: Home = None):
    """Stop the server `dojoflow server start` started for this home."""
    from . import server as servers

    stopped = servers.stop_persistent(_home(home))
    console.print(
        f"stopped the Prefect server at {stopped.ui_url}" if stopped else "no Prefect server is running for this home",
        soft_wrap=True,
        markup=False,
    )


@server_app.command("status")
def server_status_cmd(home: Home = None):
    """Say whether a server started by `dojoflow server start` runs for this home (exit 1 if not)."""
    from . import server as servers

    found = servers.running(_home(home))
    if found is None:
        console.print(
            "no Prefect server is running for this home: `dojoflow server start`", soft_wrap=True, markup=False
        )
        raise typer.Exit(1)
    console.print(f"Prefect server running: {found.ui_url} (pid {found.pid})", soft_wrap=True, markup=False)


RUNS_TABLE = {
    "run": lambda r: r["run_id"][:8],
    "name": lambda r: r["name"],
    "status": lambda r: r["status"],
    "started": lambda r: r["started_at"],
    "metrics": lambda r: r["metrics"],
    "checkpoints": lambda r: " ".join(r["checkpoints"]),
}


@command("runs")
def runs_cmd(
    home: Home = None,
    run: Annotated[
        Optional[str], typer.Option(help="Show one run (an id or prefix) with its report and checkpoint paths.")
    ] = None,
    fmt: FormatOption = None,
):
    """Past runs, newest first, with each trainer's last checkpoint.

    Status: running, completed, partial, failed, or crashed (a `running` run whose
    process is gone is marked crashed here, in the catalog and in Prefect)."""
    from tasks.runs import mark_crashed_runs, resolve_run, runs_table

    from .crashed import mark_crashed_in_prefect

    store = _store(home, create=False)
    problem = mark_crashed_in_prefect(store.root.parent, mark_crashed_runs(store))
    if problem:
        say("note: crashed runs were not marked in Prefect ({}); the catalog has them", problem)
    rows = runs_table(store)
    if run is None:
        emit(rows, fmt, title="runs (`dojoflow runs --run ID` for one run's paths)", table_columns=RUNS_TABLE)
        return
    one = next(r for r in rows if r["run_id"] == resolve_run(store, run))
    if fmt not in (None, Format.table):
        emit([one], fmt)
        return
    for key, value in one.items():
        if key != "checkpoints":
            say("{}: {}", key, "" if value is None else plain(value))
    for trainer, path in one["checkpoints"].items():
        say("checkpoint {}: {}", trainer, path)


METRICS_TABLE = {
    "step": lambda r: r["step"],
    "trainer": lambda r: r["trainer"],
    "repository": lambda r: r["repository"],
    "split": lambda r: r["split"],
    "metric": lambda r: r["metric"],
    "value": lambda r: r["value"],
    "n": lambda r: r["count"],
}


@command("metrics")
def metrics_cmd(
    home: Home = None,
    run: Annotated[
        Optional[str],
        typer.Option(help="A run id or prefix from `dojoflow runs` (default: the newest run with metrics)."),
    ] = None,
    trainer: Annotated[Optional[str], typer.Option(help="Only this trainer.")] = None,
    split: Annotated[Optional[str], typer.Option(help="Only this split (val, test).")] = None,
    repository: Annotated[Optional[str], typer.Option(help="Only this repository (its name).")] = None,
    fmt: FormatOption = None,
):
    """Metrics of one run per step, repository, trainer and split (what the UI report shows)."""
    from tasks.runs import check_split, metrics_table, resolve_run

    check_split(split)  # before the store's state: a typo is an error even with no runs yet
    store = _store(home, create=False)
    run_id = resolve_run(store, run)
    if run_id is None:
        say("no run has recorded metrics yet: `dojoflow run`")
        return
    emit(
        metrics_table(store, run_id, trainer, split, repository),
        fmt,
        title=f"metrics of run {run_id}",
        table_columns=METRICS_TABLE,
    )


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
    store = _store(home)
    with store.writer():
        result = import_progress_jsonl(path, store.root, name)
    say(
        "{}: progress dataset {}, {} rows -> {}", result["status"], repr(result["name"]), result["rows"], result["path"]
    )
    if result["status"] == "added":
        say("train on it: trainers.progress.extra_datasets: [{}]", result["name"])


REPLAY_CANNOT_PROVE_SORRY = (
    "note: the replay backend re-finds traced proofs only, and a `sorry` theorem has none: it proves "
    "no `sorry` theorem. Use the repl, kimina or leandojo backend to prove them (docs/lean-backends.md)."
)


@app.command("prove")
def prove_cmd(
    config: Annotated[
        Optional[Path],
        typer.Argument(
            help="A YAML prove config, or a pipeline config with `evaluation.proving` (default: the Lean REPL backend and the newest SFT checkpoint)."
        ),
    ] = None,
    repo: Annotated[
        Optional[list[str]],
        typer.Option("--repo", help="Repository name, repo id, URL or URL@COMMIT; repeat. Default: all."),
    ] = None,
    theorem: Annotated[
        Optional[list[str]],
        typer.Option("--theorem", help="Only this `sorry` theorem (full name); repeat. Default: all of them."),
    ] = None,
    checkpoint: Annotated[
        Optional[Path],
        typer.Option("--checkpoint", help="Tactic generator checkpoint folder (default: the newest SFT checkpoint)."),
    ] = None,
    out: Annotated[
        Optional[Path], typer.Option("--out", help="Folder for the patch files (default: <home>/patches/<run id>/).")
    ] = None,
    unsafe_no_sandbox: UnsafeNoSandbox = False,
    home: Home = None,
):
    """Try every theorem whose proof is `sorry`; proofs go to the catalog, one checked patch per repository.

    Your working tree is never modified: apply a patch with `git apply FILE` in your checkout.
    """
    from .environment import prepare_prefect_env

    try:
        from tasks.proving.config import ProveConfig

        cfg = ProveConfig.from_yaml(config) if config else ProveConfig()
        updates = {
            "home": str(home) if home else cfg.home,
            "repos": list(repo) if repo else cfg.repos,
            "theorems": list(theorem) if theorem else cfg.theorems,
            "checkpoint": str(checkpoint) if checkpoint else cfg.checkpoint,
            "out": str(out) if out else cfg.out,
        }
        if unsafe_no_sandbox:
            updates["proving"] = cfg.proving.model_dump()
            updates["proving"]["backend"]["sandbox"]["unsafe_no_sandbox"] = True
        cfg = ProveConfig.model_validate({**cfg.model_dump(), **updates})
        resolved = _home(cfg.home)
        from storage.paths import check_folder_path
        from storage.store import Store
        from tasks.proving.sorry import check_prove_inputs

        # every input checked before Prefect is imported or a flow starts (one line, exit 2)
        if cfg.out:
            check_folder_path(cfg.out, f"--out {cfg.out}", "give --out a folder for the patch files")
        store = Store.open(resolved, create=False)
        check_prove_inputs(store, cfg.repos, cfg.theorems, cfg.checkpoint, cfg.proving)
    except DojoflowError as e:
        _fail(e)
    cfg = cfg.model_copy(update={"home": str(resolved)})
    if cfg.proving.backend.kind == "replay":
        say_line(REPLAY_CANNOT_PROVE_SORRY)
    prepare_prefect_env(resolved)
    from .prove import prove
    from .terminal import library_output_to_log

    try:
        with library_output_to_log(resolved, "prove") as log:
            result = prove(config=cfg)
    except DojoflowError as e:
        _fail(e)
    say("tried {} sorry theorems, proved {}", result["theorems"], len(result["proved"]))
    for name in result["proved"]:
        say("  proved {}", name)
    for name in result.get("unverified", []):
        say("  unverified {} (the backend cannot report axioms; set backend.recheck to check it)", name)
    for e in result["errors"]:
        say("  [yellow]error[/] {}: {}", e["theorem"], e["error"])
    for w in result["patches"]:
        say("patch for {}: {}   (git apply {})", w["name"], w["path"], w["path"])
    if result.get("card"):
        say("results card: {}", result["card"])
    say_line(f"log: {log}")


@command("card")
def card_cmd(
    run: Annotated[str, typer.Argument(help="A run id or prefix from `dojoflow runs`.")],
    against: Annotated[
        Optional[str], typer.Option("--against", help="Another run: name every setting the two cards differ in.")
    ] = None,
    home: Home = None,
):
    """The results card of a run (metrics with intervals, provenance), written beside its report."""
    from tasks.card import card_diff, write_card
    from tasks.runs import resolve_run

    store = _store(home, create=False)
    run_id = resolve_run(store, run, where="RUN")
    if against is None:
        card = write_card(store, _home(home), run_id)
        typer.echo(card["markdown"])
        say("card: {}", card["path"])
        return
    other = resolve_run(store, against, where="--against")
    differences = card_diff(store, run_id, other)
    for line in differences or [f"runs {run_id} and {other} have the same settings"]:
        typer.echo(line)


def main() -> None:  # pragma: no cover
    app()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(app())
