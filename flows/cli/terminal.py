"""What `dojoflow run` shows in the terminal: one progress display while it runs and a short
summary at the end. Everything the libraries print (tqdm bars, TRL's loss dictionaries,
Lightning's tips, warnings, Prefect's own log lines) goes to the run's log file
`<home>/logs/<time>-<name>.log` instead, unless `--verbose` (docs/terminal-and-server.md).

The redirection is done on the file descriptors, so output of C extensions and child
processes is caught too. On a terminal the display is a rich live line; otherwise (piped,
CI) it is one plain line per phase, without carriage returns or colour codes.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from tasks.proving.summary import fmt_aggregate, proving_lines
from tasks.metric_registry import is_size


def log_path(home: Path, name: str) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    slug = "".join(c if c.isalnum() or c in "-_" else "-" for c in name) or "run"
    return Path(home) / "logs" / f"{stamp}-{slug}-{os.getpid()}.log"


class CapturedOutput:
    """Points file descriptors 1 and 2 at the log file for the duration of a `with`; `console`
    writes to the terminal that was there before."""

    def __init__(self, path: Path):
        self.path = path
        self.console: Console | None = None

    def __enter__(self) -> CapturedOutput:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        sys.stdout.flush()
        sys.stderr.flush()
        self._saved = (os.dup(1), os.dup(2))
        log = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(log)
        self._terminal = os.fdopen(os.dup(self._saved[0]), "w", buffering=1, encoding="utf-8", errors="replace")
        self.console = Console(file=self._terminal, highlight=False)
        return self

    def __exit__(self, *exc) -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        self._terminal.flush()
        os.dup2(self._saved[0], 1)
        os.dup2(self._saved[1], 2)
        for fd in self._saved:
            os.close(fd)
        self._terminal.close()


@contextmanager
def library_output_to_log(home: Path, name: str) -> Iterator[Path]:
    """For `prove` and `grpo`: what Prefect and the libraries print goes to a log file, as in
    `dojoflow run`; the command prints its own lines after, and the log's path."""
    path = log_path(home, name)
    before = _prefects_temporary_servers()
    with CapturedOutput(path):
        try:
            yield path
        finally:
            # Prefect's queued log lines and events go out now, while the server answers and
            # stderr still goes to the log (run_session.command_server chose the server).
            from .run_session import drain_prefect_workers

            drain_prefect_workers()
            # Prefect stops a temporary server it started itself at exit and says so on stderr:
            # stop it here, while stderr still goes to the log. Servers that were running
            # before (a test harness's) are not ours to stop.
            for server in _prefects_temporary_servers() - before:
                server.stop()


def _prefects_temporary_servers() -> set:
    server_module = sys.modules.get("prefect.server.api.server")
    if server_module is None:
        return set()
    return set(server_module.SubprocessASGIServer._instances.values())


class RunDisplay:
    """One progress display per run: step k of n, trainer, phase, elapsed time."""

    def __init__(self, console: Console):
        self.console = console
        self.started = time.monotonic()
        self.live = console.is_terminal
        self.last = ""
        self.progress = None
        if self.live:
            self.progress = Progress(
                SpinnerColumn(),
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("steps"),
                TimeElapsedColumn(),
                console=console,
                transient=True,
                # rich's defaults swap sys.stdout/sys.stderr for proxies that print above the live
                # line, which would put every library print on the terminal instead of the log file.
                redirect_stdout=False,
                redirect_stderr=False,
            )
            self.task = self.progress.add_task("starting", total=None)
            self.progress.start()

    def show(
        self,
        phase: str,
        step: int | None = None,
        total: int | None = None,
        trainer: str | None = None,
        repo: str | None = None,
    ) -> None:
        where = f"step {step}/{total} {repo or ''}".strip() if step is not None else ""
        text = " · ".join(p for p in (where, trainer, phase) if p)
        if self.progress is not None:
            done = None if step is None else step - 1
            if phase == "report":  # every step is done
                done = self.progress.tasks[0].total
            self.progress.update(self.task, description=escape(text), completed=done, total=total)
        elif text != self.last:
            elapsed = int(time.monotonic() - self.started)
            self.console.print(f"{elapsed // 60:02d}:{elapsed % 60:02d}  {escape(text)}", soft_wrap=True)
        self.last = text

    def waiting(self, why: str) -> None:
        """The current phase, and why it is not moving (another run holds its lock)."""
        text = " · ".join(p for p in (self.last, why) if p)
        if self.progress is not None:
            self.progress.update(self.task, description=escape(text))
        else:
            elapsed = int(time.monotonic() - self.started)
            self.console.print(f"{elapsed // 60:02d}:{elapsed % 60:02d}  {escape(text)}", soft_wrap=True)

    def close(self) -> None:
        if self.progress is not None:
            self.progress.stop()
            self.progress = None


SUMMARY_WIDTH = 100  # the end-of-run table fits a 100-column terminal


def _fmt(value) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def _metric_label(split: str, metric: str) -> str:
    """GRPO records `train_reward` under split `train`: show `reward`, not `train train_reward`."""
    return metric.removeprefix(f"{split}_")


def _evaluated_on(r: dict) -> str:
    """`NatBasics/test`: the repository (short name) and split a metric row is computed on."""
    repo = r.get("repository") or (r.get("repo_id") or "").split("-")[0]
    return f"{repo}/{r['split']}" if repo else r["split"]


def summary_rows(result: dict, metric_rows: list[dict]) -> list[dict]:
    """One row per step, trainer, repository and split evaluated, and metric: trained or cached,
    the run's mean training loss, and the metric as recorded, `value [low, high] (n=count)`
    (each repository's own figure: intervals are not averaged across repositories)."""
    by_split: dict[tuple[int, str], dict[str, dict[str, dict]]] = {}
    for r in metric_rows:
        if not is_size(r) and r["value"] is not None:
            metrics = by_split.setdefault((r["step"], r["trainer"]), {}).setdefault(_evaluated_on(r), {})
            metrics[_metric_label(r["split"], r["metric"])] = r
    rows = []
    for s in result["steps"]:
        for trainer, t in s["trainers"].items():
            checkpoint = t["checkpoint"]
            figures = checkpoint.get("figures") or {}
            loss = next((figures[k] for k in ("train_loss", "loss") if figures.get(k) is not None), None)
            state = "cached" if t.get("train_state") == "Cached" else "trained"
            if checkpoint.get("skipped"):
                state = f"skipped ({checkpoint['skipped']})"
            head = {"step": s["step"], "repository": s["name"], "trainer": trainer, "state": state}
            head["loss"] = "" if loss is None else _fmt(float(loss))
            splits = by_split.get((s["step"], trainer)) or {"": {}}
            for on, metrics in sorted(splits.items()):
                for metric, r in sorted(metrics.items()) or [("", None)]:
                    rows.append({**head, "split": on, "metric": metric, "value": _aggregate(r)})
                    head = {k: "" for k in head}  # the step's cells once, then only the metrics
                    on = ""
    return rows


def _aggregate(r: dict | None) -> str:
    """`0.25 [0.05, 0.7] (n=4)`; without an interval `3.88 (n=95)`; without a count the value."""
    if r is None:
        return ""
    if r.get("count") is None:
        return _fmt(float(r["value"]))
    return fmt_aggregate(r)


def summary_table(result: dict, metric_rows: list[dict]) -> Table:
    table = Table(box=box.SIMPLE_HEAD, width=SUMMARY_WIDTH, pad_edge=False, show_edge=False)
    for name, kwargs in (
        ("step: learned", {"overflow": "fold", "max_width": 15}),
        ("trainer", {"overflow": "fold", "max_width": 10}),
        ("loss", {"justify": "right", "no_wrap": True}),
        ("evaluated on", {"overflow": "fold", "max_width": 17}),
        ("metric", {"overflow": "fold"}),
        ("value [95% CI] (n)", {"justify": "right", "no_wrap": True}),
    ):
        table.add_column(name, **kwargs)
    for r in summary_rows(result, metric_rows):
        trainer = r["trainer"] if r["state"] in ("trained", "") else f"{r['trainer']} ({r['state']})"
        step = f"{r['step']} {r['repository']}" if r["step"] != "" else ""
        cells = (step, trainer, r["loss"], r["split"], r["metric"], r["value"])
        table.add_row(*(escape(str(c)) for c in cells))
    return table


def proving_summary_lines(metric_rows: list[dict], rounds: set[str] = frozenset()) -> list[str]:
    """Per step, repository and split: each proving pass rate with its 95% interval and the
    number of theorems, beside the closing-tactics baseline's (tasks/proving/summary.py). Rows of
    `rounds` (checkpoints expert iteration's rounds trained) have their own lines."""
    metric_rows = [r for r in metric_rows if r.get("checkpoint_id") not in rounds]
    steps = sorted({r["step"] for r in metric_rows if r["trainer"] == "proving"})
    return [
        f"proving step {step} {line}"
        for step in steps
        for line in proving_lines([r for r in metric_rows if r["trainer"] == "proving" and r["step"] == step])
    ]


def print_summary(console: Console, result: dict, metric_rows: list[dict], log: Path | None) -> None:
    console.print(f"done: {len(result['steps'])} steps, run {result['run_id']}", soft_wrap=True, markup=False)
    console.print(summary_table(result, metric_rows))
    console.print(
        "loss: the trainer's mean training loss over the step's training run; value: the step's evaluation on that "
        "repository and split, with its 95% interval where one is computed and n, the items it is over",
        soft_wrap=True,
        markup=False,
    )
    from tasks.expert import report as expert

    for line in proving_summary_lines(metric_rows, expert.round_checkpoints(result["steps"])):
        console.print(line, soft_wrap=True, markup=False)
    for line in expert.summary_lines(result["steps"], metric_rows):  # per round: proofs found, pass@k
        console.print(line, soft_wrap=True, markup=False)
    if result.get("untried"):  # named, with the reason (tasks/proving/summary.py)
        console.print(proving_lines([], result["untried"])[-1], soft_wrap=True, markup=False)
    for s in result["steps"]:
        for trainer, t in s["trainers"].items():
            console.print(
                f"checkpoint step {s['step']} {trainer}: {t['checkpoint']['path']}", soft_wrap=True, markup=False
            )
    for f in result.get("failures") or []:
        console.print(f"  source {f['source']} failed: {f['error']}", soft_wrap=True, markup=False)
    console.print(f"report: {result['report']}", soft_wrap=True, markup=False)
    if log is not None:
        console.print(f"log: {log}", soft_wrap=True, markup=False)
