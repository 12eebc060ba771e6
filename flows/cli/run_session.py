"""One `dojoflow run` in this process: the Prefect server it talks to, the terminal display and
log file, Ctrl-C and SIGTERM, and the summary (docs/terminal-and-server.md).

Stopping: the first SIGINT or SIGTERM raises KeyboardInterrupt in the flow (training stops
at its next Python instruction); the flow run is then marked cancelled in the catalog and
in Prefect, the temporary server is stopped, and the command exits 130. Finished steps are
cached, so the next run resumes as after a kill. A second signal exits at once.
"""

from __future__ import annotations

import os
import signal
import sys
import traceback
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from storage.errors import DojoflowError

from ..runtime import server as servers
from .output import fail
from .terminal import CapturedOutput, RunDisplay, log_path, print_summary

EXIT_INTERRUPTED = 130


class RunSession:
    def __init__(self, home: Path, name: str, verbose: bool, console: Console):
        self.home, self.name, self.verbose, self.console = Path(home), name, verbose, console
        self.log = None if verbose else log_path(home, name)
        self.server: servers.Server | None = None
        self.signals = 0
        self.in_flow = False
        self.exit_code = 0

    # -- server -----------------------------------------------------------------------------
    def _choose_server(self) -> None:
        self.server = choose_server(self.home, self._say)

    def _say(self, text: str) -> None:
        self.console.print(escape(text), soft_wrap=True, highlight=False)

    # -- signals ----------------------------------------------------------------------------
    def _on_signal(self, signum, frame) -> None:
        self.signals += 1
        if self.signals > 1:
            servers.kill_now(self.server)
            os._exit(EXIT_INTERRUPTED)
        if self.in_flow:
            raise KeyboardInterrupt(signal.Signals(signum).name)

    def __enter__(self) -> RunSession:
        self._saved_handlers = {s: signal.signal(s, self._on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
        self._say(f"Dojoflow home: {self.home}  (store, checkpoints, reports, logs, Prefect database)")
        self._choose_server()
        if self.log is not None:
            self._say(f"log: {self.log}")
        return self

    def __exit__(self, *exc) -> None:
        try:
            if self.server is not None and self.server.how == "temporary":
                drain_prefect_workers()  # else they retry the stopped server for a minute at exit
                servers.stop(self.server)
        finally:
            for s, handler in self._saved_handlers.items():
                signal.signal(s, handler)

    # -- the run ----------------------------------------------------------------------------
    def run(self, config) -> dict | None:
        """The flow's result, or None (then `exit_code` says why) after printing what happened."""
        result = error = cancelled = None
        capture = CapturedOutput(self.log) if self.log is not None else nullcontext()
        with capture as captured:
            display = RunDisplay(captured.console if captured else self.console)
            self.in_flow = True
            try:
                if self.signals:
                    raise KeyboardInterrupt
                display.show("starting Prefect")
                from .. import ui
                from ..curriculum import curriculum

                if self.server.how == "temporary":
                    servers.wait_until_up(self.server, self.home)
                ui.set_display(display)
                result = curriculum(config=config)
            except (KeyboardInterrupt, _termination_signal()) as e:
                self.in_flow = False
                cancelled = str(e) or "SIGINT"
                display.show(f"stopping ({cancelled})")
                self._mark_cancelled(cancelled)
            except DojoflowError as e:
                error = e
            except Exception as e:  # noqa: BLE001  (the whole traceback goes to the log, a line to the terminal)
                error = e
                traceback.print_exc(file=sys.stderr)
            finally:
                self.in_flow = False
                display.close()
                if "flows.ui" in sys.modules:
                    sys.modules["flows.ui"].set_display(None)
        return self._report(result, error, cancelled)

    def _mark_cancelled(self, why: str) -> None:
        from .. import ui

        try:
            ui.mark_cancelled(str(self.home), ui.current_run_id(), f"stopped by {why}")
        except Exception:  # noqa: BLE001  (stopping must not fail on the record; the log has it)
            traceback.print_exc(file=sys.stderr)

    def _report(self, result, error, cancelled) -> dict | None:
        out, log_hint = self.console, (f"; full output in {self.log}" if self.log else "")
        if cancelled is not None:
            from .. import ui

            run = ui.current_run_id()
            out.print(
                escape(
                    f"stopped ({cancelled}): run {run or '(not started)'} is marked cancelled; "
                    f"`dojoflow run` again resumes from the last finished step{log_hint}"
                ),
                soft_wrap=True,
                highlight=False,
            )
            self.exit_code = EXIT_INTERRUPTED
            return None
        if error is not None:
            fail(error, suffix=log_hint)
            self.exit_code = 2 if isinstance(error, DojoflowError) else 1
            return None
        from storage.store import Store
        from tasks.report import metrics_rows

        store = Store.open(self.home)
        print_summary(out, result, metrics_rows(store, result["run_id"]), self.log)
        from tasks.leaderboard import leaderboard_rows

        for row in leaderboard_rows(store, run_id=result["run_id"]):  # benchmarks as the field reports them
            out.print(row["line"], soft_wrap=True, markup=False)
        return result


def choose_server(home: Path, say) -> servers.Server:
    """PREFECT_API_URL's server, else the one `dojoflow server start` keeps running for `home`,
    else a temporary one (started, not waited for: see `wait_until_up`), with a line said
    about which; PREFECT_API_URL then names it for this process."""
    url = os.environ.get("PREFECT_API_URL")
    if not url and "prefect.settings" in sys.modules:  # Prefect configured in this process already
        url = sys.modules["prefect.settings"].PREFECT_API_URL.value()  # (a program embedding Dojoflow, a test)
    if url:
        say(f"Prefect server: {url} (from PREFECT_API_URL)")
        return servers.Server(url=url, pid=None, how="PREFECT_API_URL")
    server = servers.running(home)
    if server is not None:
        say(f"Prefect server: {server.ui_url} (started by `dojoflow server start`)")
    else:
        server = servers.start_temporary(home, say)  # starts while Prefect is imported
        say(
            "Prefect server: a temporary one for this run "
            "(`dojoflow server start` keeps one running between runs and shows them in its UI)"
        )
    os.environ["PREFECT_API_URL"] = server.url
    return server


@contextmanager
def command_server(home: Path, say) -> Iterator[servers.Server]:
    """The Prefect server of a one-flow command (`prove`, `grpo train`, `grpo evaluate`), chosen
    as `dojoflow run` chooses it; a temporary one is stopped after Prefect's queued logs and
    events are sent, so the command exits within seconds of its flow and prints no log errors."""
    before = os.environ.get("PREFECT_API_URL")
    server = choose_server(home, say)
    try:
        if server.how == "temporary":
            import prefect  # noqa: F401  (seconds of importing while the server starts)

            servers.wait_until_up(server, home)
        yield server
    finally:
        if server.how == "temporary":
            drain_prefect_workers()
            servers.stop(server)
        if before is None:
            os.environ.pop("PREFECT_API_URL", None)


@contextmanager
def command_flow(home: Path, log_name: str) -> Iterator[Path]:
    """Where a one-flow command (`prove`, `grpo train`, `grpo evaluate`) runs its flow: Prefect's
    environment for `home`, the server `command_server` chooses, what Prefect and the libraries
    print in the log `log_name` (terminal.library_output_to_log; its path is yielded), and a
    DojoflowError of the flow as one line and exit code 2."""
    from ..runtime.environment import prepare_prefect_env
    from .common import fail_exit
    from .output import say_line
    from .terminal import library_output_to_log

    prepare_prefect_env(home)
    with command_server(home, say_line):
        try:
            with library_output_to_log(home, log_name) as log:
                yield log
        except DojoflowError as e:
            fail_exit(e)


def drain_prefect_workers(timeout: float = 10.0) -> None:
    """Send Prefect's queued log lines and events while the server still answers."""
    if "prefect" not in sys.modules:
        return
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker

    for worker in (APILogWorker, EventsWorker):
        worker.drain_all(timeout=timeout)


def _termination_signal() -> type[BaseException]:
    from prefect.exceptions import TerminationSignal

    return TerminationSignal
