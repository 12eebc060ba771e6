"""One training process of a launched step: `python -m tasks.trainers.torchrun ... -m tasks.trainers.worker job.json`.

Every rank reads the same job (`Job`: trainer, settings, snapshot, split, parent checkpoint,
output and work folders) and calls the trainer's own `train` function; the trainers write
their checkpoint from the main process only (`lifecycle.publish`, the retriever's
`is_global_zero`), and this module writes the result (`result.json`: the figures, or why
training was skipped, or an input error) from rank 0 only. The manifest around the
checkpoint is written by the supervising process once the job succeeded
(`tasks/checkpoints.py`). Log records go to stdout as one JSON object a line
(`RECORD_MARK`), which the supervisor (`supervise.py`) puts back into its own loggers, so a
Prefect task run shows them as if training ran inside it.

This module and what it imports never import Prefect (tests/test_layering.py checks the
closure): it runs in a training environment of its own (`launch.python`).
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import traceback
from pathlib import Path

from pydantic import BaseModel

from tasks.trainers.log_progress import PROGRESS_FIELD

RECORD_MARK = "@@dojoflow-log "  # a worker's log record on stdout: RECORD_MARK + JSON
EXIT_INPUT_ERROR = 2


class Job(BaseModel):
    """What every rank of a launched step needs (JSON, written by the supervisor).

    A curriculum step names its `trainer` (the registered trainer's `train`, with the snapshot,
    split and parent); any other training names an `entry` instead, `module:function` called
    with `arguments` (JSON) as keywords, e.g. `dojoflow grpo train`'s theorem-file training
    (tasks/grpo/theorem_files.py `train_theorem_file_job`)."""

    trainer: str
    settings: dict = {}
    snapshot: dict = {}
    split_kind: str = ""
    parent_dir: str | None = None
    out_dir: str
    work_dir: str
    model_cache_dir: str | None = None
    result_file: str
    entry: str | None = None
    arguments: dict = {}


def rank() -> int:
    return int(os.environ.get("RANK", "0"))


def die_with_parent() -> None:
    """SIGKILL when torchrun (our parent) dies, even by SIGKILL: torchrun starts its workers in
    sessions of their own, so killing its group would not reach them (prctl(2) PR_SET_PDEATHSIG;
    Linux only). Exits at once if the parent is already gone (the race prctl(2) describes)."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    parent = os.getppid()
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(1, int(signal.SIGKILL), 0, 0, 0) != 0:
        return
    if os.getppid() != parent:
        os._exit(1)


class JsonLines(logging.Handler):
    """Each record as RECORD_MARK + {"name", "level", "rank", "msg"} on stdout."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            msg = record.getMessage()
            if record.exc_info:
                msg += "\n" + "".join(traceback.format_exception(*record.exc_info)).rstrip()
            fields = {"name": record.name, "level": record.levelno, "rank": rank(), "msg": msg}
            if isinstance(getattr(record, PROGRESS_FIELD, None), dict):  # log_progress's figures, for the display
                fields[PROGRESS_FIELD] = getattr(record, PROGRESS_FIELD)
            # No literal "[rank" in a record (it can only be inside a string: JSON's escape is valid
            # there), so every one the supervisor finds is torchrun's prefix (supervise._parsed_record).
            line = json.dumps(fields).replace("[rank", "\\u005brank")
            sys.stdout.write(RECORD_MARK + line + "\n")
            sys.stdout.flush()
        except Exception:  # noqa: BLE001  (logging must not kill training)
            self.handleError(record)


def setup_logging() -> None:
    handler = JsonLines()
    for name in ("tasks", "storage"):
        logger = logging.getLogger(name)
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False


def _write_result(path: Path, result: dict) -> None:
    from storage.atomic import write_json

    if rank() == 0:
        write_json(path, result)


def run(job: Job) -> int:
    """Train as the trainer's own `train` does; rank 0 writes the result. The exit code."""
    from storage.errors import InputError
    from storage.snapshot_ref import SnapshotRef

    from .base import SkipTraining
    from .registry import get

    result_file = Path(job.result_file)
    try:
        if job.entry is not None:
            from .base import load_object

            figures = load_object(job.entry)(**job.arguments)
        else:
            definition = get(job.trainer)
            figures = definition.train_fn()(
                definition.settings.model_validate(job.settings),
                SnapshotRef.from_dict(job.snapshot),
                job.split_kind,
                Path(job.parent_dir) if job.parent_dir else None,
                Path(job.out_dir),
                Path(job.work_dir),
                model_cache_dir=Path(job.model_cache_dir) if job.model_cache_dir else None,
            )
    except SkipTraining as e:
        _write_result(result_file, {"skipped": e.reason})
        return 0
    except InputError as e:
        _write_result(
            result_file, {"input_error": {"source": e.source, "problem": e.problem, "fix": e.fix, "where": e.where}}
        )
        return EXIT_INPUT_ERROR
    _write_result(result_file, {"figures": {**figures, "world_size": int(os.environ.get("WORLD_SIZE", "1"))}})
    return 0


def main(argv: list[str]) -> int:
    """Run the job of `argv[0]`; the exit code (an uncaught exception propagates)."""
    die_with_parent()
    setup_logging()
    job = Job.model_validate_json(Path(argv[0]).read_text())
    try:
        return run(job)
    finally:
        _shutdown_process_group()


def _shutdown_process_group() -> None:
    """Leave the process group (TRL/transformers leave it to exit, which warns under torch >= 2.4)."""
    if "torch" not in sys.modules:  # nothing trained here started a process group (an `entry` without torch)
        return
    try:
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized():
            dist.destroy_process_group()
    except Exception:  # noqa: BLE001  (a failed teardown after a finished job changes nothing)
        pass


if __name__ == "__main__":
    # Once the job is done (its result written, its records flushed), exit without the module
    # teardown: 1.7 s of CPU per process over torch's, transformers' and TRL's objects (the
    # workers' share of a launched step's end, tasks/quick_exit.py). A crash exits the usual way.
    from tasks.quick_exit import exit_now

    exit_now(main(sys.argv[1:]))
