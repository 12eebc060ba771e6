"""What a run shows: the Prefect UI (artifacts, the task runs' logs), the terminal's progress
display when run from `dojoflow run` (flows/cli/terminal.py), and its status in the catalog's
runs table."""

from __future__ import annotations

import logging
import os
from pathlib import Path

from prefect.artifacts import (
    create_markdown_artifact,
    create_progress_artifact,
    create_table_artifact,
    update_progress_artifact,
)

from storage.errors import DojoflowError
from storage.store import Store, dojoflow_home
from tasks import prefect_locking, runs
from tasks.report import inline_plot, interval_text, metrics_rows, rounded
from tasks.run_records import Report, TrainerStep

PLAIN_LOGIC_LOGGERS = ("tasks", "storage")


def _inside_a_run(record: logging.LogRecord) -> bool:
    from prefect.context import FlowRunContext, TaskRunContext

    return TaskRunContext.get() is not None or FlowRunContext.get() is not None


def send_plain_logic_logs_to_prefect() -> None:
    """Log lines of the plain logic (loggers under `tasks` and `storage`, which import no
    Prefect) go to the task run's logs in the Prefect UI: Prefect's API handler is attached
    to them, as PREFECT_LOGGING_EXTRA_LOGGERS would, whatever started the process (the CLI,
    a worker, a test); records logged outside a run are left to the other handlers."""
    from prefect.logging.handlers import APILogHandler

    level = logging.getLevelName(os.environ.get("PREFECT_LOGGING_LEVEL", "INFO").upper())
    for name in PLAIN_LOGIC_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(h, APILogHandler) for h in logger.handlers):
            handler = APILogHandler()
            handler.addFilter(_inside_a_run)
            logger.addHandler(handler)
        if logger.level == logging.NOTSET and isinstance(level, int):
            logger.setLevel(min(level, logging.INFO))


send_plain_logic_logs_to_prefect()

_display = None  # the terminal's RunDisplay while `dojoflow run` runs a flow in this process
_current_run: str | None = None


class _TrainingProgressToDisplay(logging.Handler):
    """The trainers' progress records (tasks/trainers/log_progress.py), in this process or
    relayed from a launched child (tasks/trainers/supervise.py), to the terminal display."""

    def emit(self, record: logging.LogRecord) -> None:
        from tasks.trainers.log_progress import PROGRESS_FIELD, TrainingProgress

        figures = getattr(record, PROGRESS_FIELD, None)
        if _display is not None and isinstance(figures, dict):
            try:
                _display.training(TrainingProgress.model_validate(figures))
            except Exception:  # noqa: BLE001  (the display must not stop training)
                self.handleError(record)


_training_handler = _TrainingProgressToDisplay()


def set_display(display) -> None:
    """Set by `dojoflow run` around a flow it runs in this process (None after it)."""
    global _display, _current_run
    if display is not None:
        _current_run = None
    _display = display
    prefect_locking.on_wait(_show_waiting if display is not None else None)
    progress_log = logging.getLogger("tasks.trainers.progress")
    if display is not None:
        if _training_handler not in progress_log.handlers:
            progress_log.addHandler(_training_handler)
    else:
        progress_log.removeHandler(_training_handler)


def _show_waiting(key: str) -> None:
    if _display is not None:
        _display.waiting("waiting for another run that is computing this step")


def current_run_id() -> str | None:
    """The flow run this process is running (set when the flow shows its first phase)."""
    return _current_run


def show(
    phase: str, step: int | None = None, total: int | None = None, trainer: str | None = None, repo: str | None = None
) -> None:
    """The flow says what it is doing: shown in the terminal's progress display, if any."""
    global _current_run
    if _current_run is None:
        from prefect.runtime import flow_run

        _current_run = str(flow_run.id) if flow_run.id else None
    if _display is not None:
        _display.show(phase, step, total, trainer, repo)


def note(line: str | None) -> None:
    """A warning the user must see: in the run's logs (the Prefect UI, the log file) and, under
    `dojoflow run`, as a line of its own on the terminal. None: nothing to say."""
    if not line:
        return
    from prefect.logging import get_run_logger

    get_run_logger().warning("%s", line)
    if _display is not None:
        _display.note(line)


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in name.lower()).strip("-") or "run"


def error_of(state) -> str:
    try:
        state.result()
    except Exception as e:  # noqa: BLE001
        return f"{type(e).__name__}: {e}"
    return state.message or state.name


def progress_description(name: str, done: int, total: int) -> str:
    """`2 of 3 curriculum steps of `sample` done (67%)`: the card says it in words, not only the bar."""
    return f"{done} of {total} curriculum steps of `{name}` done ({100.0 * done / max(total, 1):.0f}%)"


def start_progress(name: str, total: int):
    return create_progress_artifact(progress=0.0, description=progress_description(name, 0, total))


def update_progress(artifact_id, name: str, done: int, total: int) -> None:
    update_progress_artifact(
        artifact_id=artifact_id,
        progress=100.0 * done / max(total, 1),
        description=progress_description(name, done, total),
    )


def publish_metrics_table(home: str, name: str, run_id: str) -> None:
    rows = metrics_rows(Store.open(home), run_id)
    keys = ("step", "trainer", "repo", "split", "metric", "value")
    table = [{**{k: rounded(r[k]) for k in keys}, "95% CI": interval_text(r), "count": r["count"]} for r in rows]
    create_table_artifact(
        key=f"{_slug(name)}-metrics",
        table=table or [{"note": "no metrics yet"}],
        description=f"All metrics of `{name}`",
    )


def trainer_step_summary(trained, evaluated, expert_rounds: list[dict] | None = None) -> TrainerStep:
    """What the report says of one trainer at one step: its checkpoint, whether train
    and evaluate ran or were Cached, and expert iteration's rounds (flows/expert.py) if any."""
    checkpoint = trained.result()
    return TrainerStep(
        checkpoint=checkpoint,
        seconds=checkpoint.figures.get("seconds", 0.0),
        train_state=trained.name,
        evaluate_state=evaluated.name,
        metrics=len(evaluated.result()),
        expert_rounds=expert_rounds,
    )


def publish_report(name: str, report: Report) -> None:
    create_markdown_artifact(
        key=f"{_slug(name)}-report",
        markdown=inline_plot(report.markdown, report.plot),
        description=f"Run report of `{name}` ({report.path})",
    )


def publish_card(home: str, name: str, run_id: str) -> str:
    """Write the run's results card beside its report (tasks/card.py) and publish it; its path."""
    from tasks.card import write_card

    card = write_card(Store.open(home), Path(home), run_id)
    create_markdown_artifact(
        key=f"{_slug(name)}-card", markdown=card["markdown"], description=f"Results card of `{name}` ({card['path']})"
    )
    return card["path"]


def _record_end(flow_run, status: str, finished_at=None) -> Store | None:
    config = flow_run.parameters.get("config") or {}
    home = config.get("home") if isinstance(config, dict) else getattr(config, "home", None)
    try:
        store = Store.open(dojoflow_home(home), create=False)
    except DojoflowError:
        return None  # failed before the store existed: nothing was recorded
    runs.record_run_end(store, str(flow_run.id), status, None, finished_at)
    return store


def mark_run_failed(flow, flow_run, state) -> None:
    """Flow hook (on_failure): a run that raised is `failed` in `dojoflow runs`, not left `running`."""
    _record_end(flow_run, "failed")


def mark_run_crashed(flow, flow_run, state) -> None:
    """Flow hook (on_crashed): a run whose process died (a worker's flow-run process
    SIGKILLed by the OOM killer, whose Runner then calls this) is `crashed` in `dojoflow runs`,
    ended when Prefect saw it end; its unfinished task runs become Crashed too, as Prefect's
    own crash handling does not touch them (they stayed Running in the UI for good)."""
    from .runtime import crashed

    store = _record_end(flow_run, "crashed", getattr(state, "timestamp", None))
    if store is not None:
        crashed.mark_crashed_in_prefect(store.root.parent, [str(flow_run.id)])


def mark_run_cancelled(flow, flow_run, state) -> None:
    """Flow hook (on_cancellation): a run cancelled from the UI or a stopped worker is
    `cancelled` in `dojoflow runs`; its finished steps are cached and the next run resumes."""
    _record_end(flow_run, "cancelled")


def mark_cancelled(home: str, run_id: str | None, why: str) -> None:
    """After Ctrl-C or SIGTERM in `dojoflow run`: the run is `cancelled` in the catalog and in
    Prefect (the engine has marked it crashed by then), so neither shows it running."""
    if run_id is None:
        return
    from prefect.client.orchestration import get_client
    from prefect.states import Cancelled

    try:
        runs.record_run_end(Store.open(home, create=False), run_id, "cancelled")
    except DojoflowError:
        pass
    with get_client(sync_client=True) as client:
        client.set_flow_run_state(run_id, Cancelled(message=why), force=True)
