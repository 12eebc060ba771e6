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

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from tasks.metric_registry import is_size
from tasks.proving.summary import fmt_aggregate, proving_lines


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


PLAIN_TRAINING_EVERY_S = 30.0  # piped output: a trainer's progress line at most this often (first and last always)


class RunDisplay:
    """One progress display per run: step k of n, trainer, phase, elapsed time."""

    def __init__(self, console: Console):
        self.console = console
        self.started = time.monotonic()
        self.live = console.is_terminal
        self.last = ""
        self._trained_at: float | None = None  # when plain output last printed a trainer's progress
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
            self._trained_at = None  # a new phase: its first training progress is printed
            elapsed = int(time.monotonic() - self.started)
            self.console.print(f"{elapsed // 60:02d}:{elapsed % 60:02d}  {escape(text)}", soft_wrap=True)
        self.last = text

    def training(self, progress) -> None:
        """A trainer's progress (tasks/trainers/log_progress.py's `TrainingProgress`) after the
        current phase: optimizer steps done of the total, the latest loss, the time left. Plain
        output prints the first and last of a phase and one every `PLAIN_TRAINING_EVERY_S`."""
        from tasks.trainers.log_progress import duration

        total = f"/{progress.total}" if progress.total else ""
        parts = [self.last, f"optimizer step {progress.step}{total}"]
        if progress.loss is not None:
            parts.append(f"loss {progress.loss:.4g}")
        if progress.seconds_left is not None:
            parts.append(f"about {duration(progress.seconds_left)} left")
        text = " · ".join(p for p in parts if p)
        if self.progress is not None:
            self.progress.update(self.task, description=escape(text))
            return
        now = time.monotonic()
        last_step = progress.total is not None and progress.step >= progress.total
        if self._trained_at is None or last_step or now - self._trained_at >= PLAIN_TRAINING_EVERY_S:
            self._trained_at = now
            elapsed = int(now - self.started)
            self.console.print(f"{elapsed // 60:02d}:{elapsed % 60:02d}  {escape(text)}", soft_wrap=True)

    def note(self, text: str) -> None:
        """One line that stays (a warning the user must see), above the live line or between the plain ones."""
        if self.progress is not None:
            self.progress.console.print(escape(text), soft_wrap=True)
        else:
            elapsed = int(time.monotonic() - self.started)
            self.console.print(f"{elapsed // 60:02d}:{elapsed % 60:02d}  {escape(text)}", soft_wrap=True)

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


SUMMARY_WIDTH = 80  # the end-of-run summary fits an 80-column terminal


def _fmt(value) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def _metric_label(split: str, metric: str) -> str:
    """GRPO records `train_reward` under split `train`: show `reward`, not `train train_reward`."""
    return metric.removeprefix(f"{split}_")


def _evaluated_on(r: dict) -> str:
    """`NatBasics/test`: the repository (short name) and split a metric row is computed on."""
    repo = r.get("repository") or (r.get("repo_id") or "").split("-")[0]
    return f"{repo}/{r['split']}" if repo else r["split"]


SUMMARY_ROWS = 14  # the compact summary's table: the last steps' rows (the whole table: `dojoflow metrics`)
SPLITS_PREFERRED = ("test", "val", "train")


def _headline(rows: list[dict], repository: str) -> dict | None:
    """The figure a reader looks at first for one step and trainer: a skill (its declared kind) on
    the repository the step learned, on the held-out split first, one with a baseline first."""
    skills = [r for r in rows if r.get("kind") in ("score", None) and not is_size(r) and r["value"] is not None]
    if not skills:
        return None

    def rank(r):
        split = SPLITS_PREFERRED.index(r["split"]) if r["split"] in SPLITS_PREFERRED else len(SPLITS_PREFERRED)
        own = r.get("repository") == repository or r.get("repo_id") == r.get("step_repo_id")
        return (not own, split, not r.get("baseline_metric"), r.get("question") is None, r["metric"])

    return min(skills, key=rank)


def compact_rows(result: dict, metric_rows: list[dict], rounds: set[str] = frozenset()) -> list[list[str]]:
    """One row per step and trainer (proving among them): state, loss, its headline figure with its
    interval and n, and the baseline beside it, marked where the figure is below it
    (tasks/metric_registry.py). Rows of `rounds` (checkpoints of expert iteration's rounds) have
    their own lines."""
    from tasks.metric_registry import baselines_of, below_baseline

    metric_rows = [r for r in metric_rows if r.get("checkpoint_id") not in rounds]
    bases = {id(metric_rows[i]): b for i, b in baselines_of(metric_rows).items()}
    out = []
    proving = {r["step"] for r in metric_rows if r["trainer"] == "proving"}
    for s in result["steps"] or [{"step": step, "name": "", "trainers": {}} for step in sorted(proving)]:
        trainers = {**s["trainers"], **({"proving": {"checkpoint": {}}} if s["step"] in proving else {})}
        for trainer, t in trainers.items():
            checkpoint = t["checkpoint"]
            figures = checkpoint.get("figures") or {}
            loss = next((figures[k] for k in ("train_loss", "loss") if figures.get(k) is not None), None)
            state = "" if t.get("train_state") != "Cached" else "*"  # * cached, - skipped (a footnote says)
            if checkpoint.get("skipped"):
                state = "-"
            mine = [r for r in metric_rows if r["step"] == s["step"] and r["trainer"] == trainer]
            r = _headline(mine, s["name"])
            base = bases.get(id(r)) if r is not None else None
            own = r and r.get("repository", r.get("repo_id")) == s["name"]
            where = "" if own and r["split"] == "test" else (r["split"] if own else _evaluated_on(r)) if r else ""
            figure = f"{_metric_label(r['split'], r['metric'])} {where}".strip() if r else ""
            mark = ("BELOW " if below_baseline(r, base) else "") + _fmt(float(base["value"])) if base else ""
            out.append(
                [f"{s['step']} {s['name']}", trainer + state, "" if loss is None else _fmt(float(loss)), figure]
                + [_aggregate(r), mark]
            )
    return out


def _aggregate(r: dict | None) -> str:
    """`0.25 [0.05, 0.7] (n=4)`; without an interval `3.88 (n=95)`; without a count the value."""
    if r is None:
        return ""
    if r.get("count") is None:
        return _fmt(float(r["value"]))
    return fmt_aggregate(r)


COMPACT_HEADERS = ("step", "trainer", "loss", "figure", "value [95% CI] (n)", "baseline")


def compact_lines(rows: list[list[str]], width: int) -> list[str]:
    """The compact table as lines of at most `width`: every column as wide as its widest cell,
    the figure's and the step's names shortened with `…` (at a word where they can) if need be."""
    table = [list(COMPACT_HEADERS), *rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(COMPACT_HEADERS))]
    for i, least in ((3, 12), (0, 8)):  # the figure's name first, then the step's repository
        over = sum(widths) + 2 * (len(widths) - 1) - width
        if over > 0:
            widths[i] = max(least, widths[i] - over)
    right = (2, 4, 5)
    return [
        "  ".join(
            (_shorten(c, w).rjust(w) if i in right else _shorten(c, w).ljust(w))
            for i, (c, w) in enumerate(zip(r, widths))
        ).rstrip()
        for r in table
    ]


def _shorten(text: str, width: int) -> str:
    """`text` cut to `width` with `…`, at the last space or `_` where one is near the end."""
    if len(text) <= width:
        return text
    cut = text[: width - 1]
    at = max(cut.rfind(" "), cut.rfind("_"))
    return (cut[: at + 1] if at >= width // 2 else cut) + "…"


def print_summary(console: Console, result: dict, metric_rows: list[dict], log: Path | None) -> None:
    """The end of a run on one screen (at most ~24 lines at 80 columns): per step and trainer one
    headline figure beside its baseline, figures below their baseline marked, the last step's
    proving figures, where the report and log are, and the command that prints every figure."""
    from tasks.expert import report as expert
    from tasks.metric_registry import read_meaning

    metric_rows = read_meaning(metric_rows)
    say = lambda text: console.print(text, soft_wrap=True, markup=False)  # noqa: E731
    say(f"done: {len(result['steps'])} steps, run {result['run_id']}")
    rows = compact_rows(result, metric_rows, expert.round_checkpoints(result["steps"]))
    if rows:
        if len(rows) > SUMMARY_ROWS:
            say(f"... {len(rows) - SUMMARY_ROWS} earlier rows: dojoflow metrics --run {result['run_id']}")
        for line in compact_lines(rows[-SUMMARY_ROWS:], min(console.width, SUMMARY_WIDTH)):
            say(line)
        notes = ["* cached"] if any(r[1].endswith("*") for r in rows) else []
        notes += ["- skipped"] if any(r[1].endswith("-") for r in rows) else []
        say("; ".join([*notes, "figures on the step's repository, test split, unless named"]))
        below = sum(1 for r in rows if r[-1].startswith("BELOW"))
        if below:
            say(f"BELOW: {below} figure(s) under their baseline: not worth citing")
    for line in expert.summary_lines(result["steps"], metric_rows)[-3:]:  # per round: proofs found, pass@k
        say(line)
    if result.get("untried"):  # named, with the reason (tasks/proving/summary.py)
        say(proving_lines([], result["untried"], names_shown=3)[-1])
    for f in (result.get("failures") or [])[:3]:
        say(f"  source {f['source']} failed: {f['error']}")
    for s in result["steps"][-1:]:  # the checkpoints a next run starts from (every step's: dojoflow checkpoints)
        for trainer, t in s["trainers"].items():
            say(f"checkpoint step {s['step']} {trainer}: {t['checkpoint']['path']}")
    say(f"report: {result['report']}")
    if log is not None:
        say(f"log: {log}")
    say(f"every figure: dojoflow metrics --run {result['run_id']}; checkpoints: dojoflow checkpoints")
