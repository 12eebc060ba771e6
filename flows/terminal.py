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
from datetime import UTC, datetime
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from tasks.proving.summary import proving_lines
from tasks.report import COUNT_METRICS


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

    def close(self) -> None:
        if self.progress is not None:
            self.progress.stop()
            self.progress = None


def _fmt(value) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def summary_lines(result: dict, metric_rows: list[dict]) -> list[str]:
    """Per step and trainer: trained or cached, the training loss, the evaluation metrics
    (averaged over the evaluated repositories), and the checkpoint; then the step's proving
    pass rates per repository and split, with 95% intervals and the number of theorems,
    beside the closing-tactics baseline (tasks/proving/summary.py)."""
    by_step: dict[tuple[int, str], dict[tuple[str, str], list[float]]] = {}
    for r in metric_rows:
        if r["metric"] not in COUNT_METRICS and r["value"] is not None:
            by_step.setdefault((r["step"], r["trainer"]), {}).setdefault((r["split"], r["metric"]), []).append(
                float(r["value"])
            )
    lines = []
    for s in result["steps"]:
        for trainer, t in s["trainers"].items():
            checkpoint = t["checkpoint"]
            figures = checkpoint.get("figures") or {}
            loss = next((figures[k] for k in ("train_loss", "loss") if figures.get(k) is not None), None)
            metrics = by_step.get((s["step"], trainer), {})
            shown = ", ".join(
                f"{split} {metric} {_fmt(sum(v) / len(v))}" for (split, metric), v in sorted(metrics.items())
            )
            state = "cached" if t.get("train_state") == "Cached" else "trained"
            if checkpoint.get("skipped"):
                state = f"skipped ({checkpoint['skipped']})"
            parts = [f"step {s['step']} {s['name']}", trainer, state]
            if loss is not None:
                parts.append(f"loss {_fmt(float(loss))}")
            if shown:
                parts.append(shown)
            parts.append(f"checkpoint {checkpoint['path']}")
            lines.append("  " + " | ".join(parts))
        proving = [r for r in metric_rows if r["step"] == s["step"] and r["trainer"] == "proving"]
        lines += [f"  step {s['step']} proving {line}" for line in proving_lines(proving)]
    return lines


def print_summary(console: Console, result: dict, metric_rows: list[dict], log: Path | None) -> None:
    console.print(f"done: {len(result['steps'])} steps, run {result['run_id']}", soft_wrap=True, markup=False)
    for line in summary_lines(result, metric_rows):
        console.print(line, soft_wrap=True, markup=False)
    for f in result.get("failures") or []:
        console.print(f"  source {f['source']} failed: {f['error']}", soft_wrap=True, markup=False)
    console.print(f"report: {result['report']}", soft_wrap=True, markup=False)
    if log is not None:
        console.print(f"log: {log}", soft_wrap=True, markup=False)
