"""The supervising side of a launched step: start torchrun, stream its output, stop it whole.

`train_in_child` is what `tasks/checkpoints.py` calls instead of a trainer's `train` when
the step's `launch:` asks for a child (`LaunchSettings.in_process` is false). It

- writes the job (`worker.Job`) into `<work_dir>/launch/job.json`;
- starts `torchrun ... -m tasks.trainers.worker job.json` in a process group of its own,
  through a small launcher that asks for SIGKILL when this process dies (prctl(2)
  PR_SET_PDEATHSIG: ties torchrun to the *thread* that started it, which waits here until
  the end); each worker asks the same of torchrun (`worker.die_with_parent`), so a SIGKILL of
  this process leaves no training process behind;
- reads the child's output line by line: the workers' log records (`worker.RECORD_MARK`)
  go back into the loggers they came from (rank 0's; other ranks' warnings and errors,
  prefixed with the rank), every other line into `tasks.trainers.launch` at INFO: under a
  Prefect task run both reach the task's logs (flows/ui.py), the progress lines included;
- on KeyboardInterrupt (Ctrl-C), a cancellation raised in this thread, or any other
  exception, stops the whole group (SIGTERM, which torchrun forwards to its workers, then
  SIGKILL) before re-raising;
- turns the result into figures, `SkipTraining`, the worker's `InputError`, or
  `TrainingProcessFailed` naming the rank, its exit code and the last lines of output.

Imports no Prefect and no torch.
"""

from __future__ import annotations

import collections
import json
import logging
import re
import signal
import subprocess
from pathlib import Path

from storage import atomic
from storage.errors import DojoflowError, InputError

from ..process_group import dying_with_this_process, stop_group
from .base import SkipTraining
from .launch import LaunchSettings, child_env, torchrun_command
from .log_progress import PROGRESS_FIELD
from .worker import RECORD_MARK, Job

log = logging.getLogger("tasks.trainers.launch")

LAST_LINES = 25
STOP_GRACE_S = 30.0  # after SIGTERM, how long torchrun gets to stop its workers before SIGKILL


class TrainingProcessFailed(DojoflowError):
    """A training process of a launched step died: which rank, its exit code, its last lines."""

    def __init__(self, trainer: str, rank: int | None, exit_code: int, last_lines: list[str]):
        self.trainer, self.rank, self.exit_code, self.last_lines = trainer, rank, exit_code, last_lines
        who = f"rank {rank}" if rank is not None else "torchrun"
        tail = "\n".join(last_lines)
        super().__init__(
            f"training process {who} of trainer {trainer!r} exited with code {exit_code}; last lines:\n{tail}"
        )


_RANK_LINE = re.compile(r"^\[rank (\d+)\] ?(.*)$", re.DOTALL)


class Output:
    """The child's last lines: all of them, and each rank's own (`LAST_LINES` each)."""

    def __init__(self) -> None:
        self.all: collections.deque = collections.deque(maxlen=LAST_LINES)
        self.by_rank: dict[int, collections.deque] = {}

    def add(self, rank: int | None, text: str) -> None:
        self.all.append(text if rank is None else f"[rank {rank}] {text}")
        if rank is not None:
            self.by_rank.setdefault(rank, collections.deque(maxlen=LAST_LINES)).append(text)


# A worker's record, with torchrun's rank prefix when it has one.
_RECORD_AT = re.compile(r"(?:\[rank \d+\] ?)?" + re.escape(RECORD_MARK))


def relay(line: str, out: Output) -> None:
    """One line of the child's output into the loggers (see the module docstring)."""
    line = line.rstrip("\n")
    # A progress bar's frame ends without a newline (tqdm's frames on stderr, which torchrun prints as
    # they come), so a worker's record can follow one on the same line: the frame is a line of its own.
    glued = _RECORD_AT.search(line)
    if glued is not None and glued.start() > 0:
        relay(line[: glued.start()], out)
        relay(line[glued.start() :], out)
        return
    rank, text = None, line
    prefixed = _RANK_LINE.match(line)
    if prefixed:
        rank, text = int(prefixed.group(1)), prefixed.group(2)
    if text.startswith(RECORD_MARK):
        record, others = _parsed_record(rank, text[len(RECORD_MARK) :])
        for other in others:
            relay(other, out)
        if isinstance(record, dict) and "msg" in record:
            rank, level, msg = (
                int(record.get("rank", rank or 0)),
                int(record.get("level", logging.INFO)),
                str(record["msg"]),
            )
            out.add(rank, msg)
            if rank == 0:
                extra = (
                    {PROGRESS_FIELD: record[PROGRESS_FIELD]} if isinstance(record.get(PROGRESS_FIELD), dict) else None
                )
                logging.getLogger(str(record.get("name", "tasks"))).log(level, "%s", msg, extra=extra)
            elif level >= logging.WARNING:
                logging.getLogger(str(record.get("name", "tasks"))).log(level, "rank %d: %s", rank, msg)
            return
    if text.strip():
        out.add(rank, text)
        # rank 0's lines and torchrun's own; the other ranks' (the same progress bars) at DEBUG
        log.log(logging.INFO if not rank else logging.DEBUG, "%s", line)


_PIECE = re.compile(r"\[rank (\d+)\] ?")  # RANK_PREFIX before each piece torchrun prints


def _parsed_record(rank: int | None, body: str) -> tuple[object, list[str]]:
    """A worker's record from the JSON after RECORD_MARK, and the other output printed inside it.

    torchrun's tailer prints what a worker has written so far: `readline()` at the end of a log
    file still being written returns part of a line, which it prints after the rank's prefix with
    no newline, and the rest later after the prefix again (torch/distributed/elastic/
    multiprocessing/tail_log.py, `tail_logfile`). So a record read while it was being written comes
    as `{"msg": "st[rank 0] ep 16..."}` on one line, maybe with another piece between (a progress
    bar's frame from the rank's stderr, which starts with a carriage return; another rank's line).
    Seen under load: a step missing from the UI test's progress lines (tests/e2e/test_report_in_ui.py).
    A worker writes no literal `[rank` in a record (worker.JsonLines), so every one here is torchrun's.
    """
    parts = _PIECE.split(body)
    if len(parts) == 1:
        try:
            return json.loads(body), []
        except json.JSONDecodeError:
            return None, []  # [first, rank, piece, rank, piece, ...]
    mine, others = [parts[0]], []
    for piece_rank, piece in zip(parts[1::2], parts[2::2]):
        if (rank is None or int(piece_rank) == rank) and "\r" not in piece:
            mine.append(piece)
        else:
            others.append(f"[rank {piece_rank}] {piece}")
    try:
        return json.loads("".join(mine)), others
    except json.JSONDecodeError:
        return None, []


_FAILED_RANK = re.compile(r"\brank\s*:\s*(\d+)")
_EXIT_CODE = re.compile(r"\bexitcode\s*:\s*(-?\d+)")


def first_failure(lines: list[str]) -> tuple[int | None, int | None]:
    """(rank, exit code) of torchrun's "Root Cause (first observed failure)", when it printed one."""
    text = "\n".join(lines)
    root = text.rfind("Root Cause")
    text = text[root:] if root >= 0 else text
    rank, code = _FAILED_RANK.search(text), _EXIT_CODE.search(text)
    return (int(rank.group(1)) if rank else None, int(code.group(1)) if code else None)


def write_job(job: Job, job_file: Path) -> None:
    job_file.parent.mkdir(parents=True, exist_ok=True)
    Path(job.result_file).unlink(missing_ok=True)  # a killed attempt's result is not this one's
    atomic.write_text(job_file, job.model_dump_json(indent=1))


def run_child(cmd: list[str], env: dict[str, str], out: Output) -> int:
    """Run `cmd` (in a session of its own, dying with this process), relaying its output; its exit code."""
    proc = subprocess.Popen(
        dying_with_this_process(cmd, signal.SIGKILL),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
        text=True,
        errors="replace",
        bufsize=1,
    )
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            relay(line, out)
        return proc.wait()
    except BaseException:  # Ctrl-C, a cancellation raised in this thread, a failed relay: stop it all
        stop_group(proc, STOP_GRACE_S)
        raise
    finally:
        if proc.poll() is None:
            stop_group(proc, STOP_GRACE_S)
        if proc.stdout is not None:
            proc.stdout.close()


def train_in_child(
    trainer: str,
    settings,
    snapshot,
    split_kind: str,
    parent_dir: Path | None,
    out_dir: Path,
    work_dir: Path,
    *,
    model_cache_dir: Path | None,
    launch: LaunchSettings,
) -> dict:
    """Train one step in torchrun's processes (see the module docstring); the figures."""
    launch_dir = Path(work_dir) / "launch"
    job = Job(
        trainer=trainer,
        settings=settings.model_dump(mode="json"),
        snapshot=snapshot.to_dict(),
        split_kind=split_kind,
        parent_dir=str(parent_dir) if parent_dir is not None else None,
        out_dir=str(out_dir),
        work_dir=str(work_dir),
        model_cache_dir=str(model_cache_dir) if model_cache_dir is not None else None,
        result_file=str(launch_dir / "result.json"),
    )
    return run_job(job, launch_dir, launch)


def run_job(job: Job, launch_dir: Path, launch: LaunchSettings) -> dict:
    """Write `job` under `launch_dir`, run it under torchrun, supervised; the figures."""
    job_file = launch_dir / "job.json"
    write_job(job, job_file)
    cmd = torchrun_command(launch, job_file)
    name = job.trainer
    log.info("launching %s: %d process(es) x %d node(s): %s", name, launch.processes, launch.nodes, " ".join(cmd))
    out = Output()
    code = run_child(cmd, child_env(launch), out)
    return outcome(name, code, Path(job.result_file), out)


def call_in_child(
    name: str, entry: str, arguments: dict, out_dir: Path, work_dir: Path, *, launch: LaunchSettings
) -> dict:
    """Run the training function `entry` (`module:function`, keywords `arguments`: JSON) in
    torchrun's processes, as `train_in_child` runs a curriculum trainer; `name` names it in logs
    and errors."""
    launch_dir = Path(work_dir) / "launch"
    job = Job(
        trainer=name,
        out_dir=str(out_dir),
        work_dir=str(work_dir),
        result_file=str(launch_dir / "result.json"),
        entry=entry,
        arguments=arguments,
    )
    return run_job(job, launch_dir, launch)


def outcome(trainer: str, code: int, result_file: Path, out: Output) -> dict:
    """The job's figures, or the exception its result (or its exit) stands for."""
    result = json.loads(result_file.read_text()) if result_file.is_file() else None
    if result is not None and "input_error" in result:
        e = result["input_error"]
        raise InputError(e["source"], e["problem"], e["fix"], where=e.get("where"))
    if code == 0 and result is not None:
        if "skipped" in result:
            raise SkipTraining(result["skipped"])
        return dict(result["figures"])
    rank, child_code = first_failure(list(out.all))
    last = list(out.by_rank.get(rank, out.all)) if rank is not None else list(out.all)
    raise TrainingProcessFailed(trainer, rank, child_code if child_code is not None else code, last)
