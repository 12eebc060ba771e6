"""`dojoflow run|runs|metrics|card`: run the curriculum, and what past runs did."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from storage.errors import DojoflowError, InputError
from tasks.formatting import row_interval

from .common import FormatOption, Home, app, command, fail_exit, home_of, store_of
from .output import Format, console, emit, plain, say, say_line


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
    from ..runtime.environment import prepare_prefect_env

    try:
        from tasks.config import PipelineConfig

        cfg = PipelineConfig.from_yaml(config) if config else PipelineConfig()
        overrides = {
            k: v for k, v in (("home", str(home) if home else None), ("max_steps", max_steps)) if v is not None
        }
        cfg = cfg.with_overrides(overrides, source="the command line")
        resolved = home_of(cfg.home)
        cfg = cfg.model_copy(update={"home": str(resolved)})  # the checks remember under it
        cfg.validate_for_run(warn=lambda line: say_line(f"warning: {line}"))
    except DojoflowError as e:
        fail_exit(e)
    prepare_prefect_env(resolved)
    from .run_session import RunSession

    with RunSession(resolved, cfg.name, verbose, console) as session:
        result = session.run(cfg)
    if result is None:
        raise typer.Exit(session.exit_code)


@command("config")
def config_cmd(
    config: Annotated[
        Optional[Path], typer.Argument(help="A YAML PipelineConfig to check and show with its defaults filled in.")
    ] = None,
    schema: Annotated[
        bool, typer.Option("--schema", help="Print the JSON Schema of a run config: every field, its type and meaning.")
    ] = False,
):
    """A run config's fields: `--schema` lists every one with its meaning; CONFIG (default: the
    shipped sample) is checked and printed whole, defaults included."""
    import json

    import yaml

    from tasks.config import PipelineConfig

    if schema:
        typer.echo(json.dumps(PipelineConfig.model_json_schema(), indent=2))
        return
    cfg = PipelineConfig.from_yaml(config) if config else PipelineConfig()
    typer.echo(yaml.safe_dump(cfg.model_dump(mode="json"), sort_keys=False, allow_unicode=True), nl=False)


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

    from ..runtime.crashed import mark_crashed_in_prefect

    store = store_of(home, create=False)
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
    "95% CI": lambda r: row_interval(r),  # the CSV's ci_low and ci_high (tasks/formatting.py)
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
    store = store_of(home, create=False)
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

    store = store_of(home, create=False)
    run_id = resolve_run(store, run, where="RUN")
    if against is None:
        card = write_card(store, home_of(home), run_id)
        typer.echo(card["markdown"])
        say("card: {}", card["path"])
        return
    other = resolve_run(store, against, where="--against")
    if other == run_id:
        raise InputError(
            against, f"is run {run_id}, the card's own run", "give another run to compare with", where="--against"
        )
    differences = card_diff(store, run_id, other)
    for line in differences or [f"runs {run_id} and {other} have the same settings"]:
        typer.echo(line)
