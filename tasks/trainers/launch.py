"""How a training step is launched: `launch:` settings and the torchrun command they make.

Every trainer's settings carry `launch` (`launch_field()`; None takes the pipeline's
`launch:` default, `tasks/config.py`). With the defaults (one process, one node, Dojoflow's
own Python, no extra variables) a step trains inside the calling process, as it always
did, with the thread count a child would have (`threads_of_a_child`; tests/tasks/test_launch.py
and test_launch_trainers.py show the checkpoint is, to the bit, the one a child would write);
anything else trains in a child started as

    <python> -m tasks.trainers.torchrun --nnodes N --nproc_per_node P (--standalone | --rdzv-*)
        -m tasks.trainers.worker <work_dir>/launch/job.json

(torchrun, `torch.distributed.run`, that exits without the module teardown: torchrun.py)
and supervised by `tasks/trainers/supervise.py`. FSDP and DeepSpeed are `training:` keys
(`fsdp`, `fsdp_config`, `deepspeed`) checked like every other (`training_args.py`);
`check_launch` refuses, before any work, what cannot run here. docs/scaling.md.

Importing this module imports no torch.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from storage.errors import InputError

PROJECT_ROOT = Path(__file__).resolve().parents[2]  # on the child's PYTHONPATH (another interpreter)
WORKER_MODULE = "tasks.trainers.worker"
TORCHRUN_MODULE = "tasks.trainers.torchrun"  # torch.distributed.run, without the teardown at its end
RANK_PREFIX = "[rank ${rank}] "  # torchrun's prefix of each worker line (TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE)
NEEDED_PACKAGES = ("torch", "transformers", "trl", "pydantic", "duckdb", "pyarrow")  # the worker's imports


class Rendezvous(BaseModel):
    """torchrun's rendezvous: how the processes of several nodes find each other."""

    model_config = ConfigDict(extra="forbid")

    endpoint: str = Field(
        ..., min_length=1, description="host:port every node can reach (torchrun --rdzv-endpoint), e.g. node0:29400."
    )
    id: str = Field("dojoflow", min_length=1, description="Job id shared by the nodes of one run (torchrun --rdzv-id).")
    backend: Literal["c10d", "static"] = Field(
        "c10d",
        description="torchrun --rdzv-backend: c10d (no fixed ranks; the first node hosts the store) or static "
        "(with node_rank: the node at the endpoint is rank 0).",
    )
    node_rank: int | None = Field(
        None, ge=0, description="This node's rank (static backend only: torchrun --node-rank); null for c10d."
    )


class LaunchSettings(BaseModel):
    """How a trainer's step runs: how many processes, on how many nodes, in which Python."""

    model_config = ConfigDict(extra="forbid")

    processes: int = Field(
        1,
        ge=1,
        description="Training processes per node (torchrun --nproc_per_node): one per GPU; on a CPU machine at "
        "most its cores. The global batch is per-device batch x processes x nodes x accumulation.",
    )
    nodes: int = Field(1, ge=1, description="Nodes (torchrun --nnodes); more than 1 needs `rdzv`.")
    rdzv: Rendezvous | None = Field(None, description="Rendezvous settings of a multi-node job; null on one node.")
    python: str | None = Field(
        None,
        description="Interpreter of the training environment (e.g. a venv with vLLM, which cannot share "
        "Dojoflow's environment; docs/scaling.md); null: Dojoflow's own. It needs torch, transformers, trl "
        "and Dojoflow's own dependencies; Prefect is not needed.",
    )
    env: dict[str, str] = Field(
        default_factory=dict,
        description="Extra environment variables of the training processes (e.g. NCCL_DEBUG, CUDA_VISIBLE_DEVICES).",
    )

    def in_process(self) -> bool:
        """Whether the step can train inside the calling process (the defaults)."""
        return self.processes == 1 and self.nodes == 1 and self.python is None and not self.env

    def world_size(self) -> int:
        return self.processes * self.nodes


def launch_field():
    """The `launch` field, declared the same way on every trainer's settings model."""
    return Field(
        None,
        description="How this trainer's steps are launched (processes, nodes, rendezvous, python, env); null "
        "takes the pipeline's `launch:`. Cannot change what is trained (with the same global batch).",
        json_schema_extra={"checkpoint_id": False},  # tasks/checkpoints.py: not part of the checkpoint id
    )


def launch_of(settings) -> LaunchSettings:
    """The launch settings of a trainer's settings (the defaults when it has none)."""
    launch = getattr(settings, "launch", None)
    if isinstance(launch, dict):
        return LaunchSettings.model_validate(launch)
    return launch or LaunchSettings()


def torchrun_command(launch: LaunchSettings, job_file: Path) -> list[str]:
    """The torchrun command line of a job (without the die-with-parent wrapper)."""
    python = launch.python or sys.executable
    cmd = [python, "-m", TORCHRUN_MODULE, "--nnodes", str(launch.nodes)]
    cmd += ["--nproc_per_node", str(launch.processes)]
    if launch.rdzv is None:
        cmd += ["--standalone"]
    else:
        r = launch.rdzv
        cmd += ["--rdzv-backend", r.backend, "--rdzv-endpoint", r.endpoint, "--rdzv-id", r.id]
        if r.node_rank is not None:
            cmd += ["--node-rank", str(r.node_rank)]
    # Every worker line on torchrun's stdout, prefixed with its global rank (RANK_PREFIX, child_env);
    # torchrun also keeps them in files under <work_dir>/launch/logs.
    cmd += ["--tee", "3", "--log-dir", str(Path(job_file).parent / "logs")]
    return [*cmd, "-m", WORKER_MODULE, str(job_file)]


def child_env(launch: LaunchSettings) -> dict[str, str]:
    """The training processes' environment: this one, Dojoflow's source on PYTHONPATH (another
    interpreter finds the package), unbuffered output, this machine's cores shared out as
    OpenMP threads per process (unless OMP_NUM_THREADS is given), and `launch.env` last."""
    env = dict(os.environ)
    path = env.get("PYTHONPATH", "")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PROJECT_ROOT), path) if p)
    env["PYTHONUNBUFFERED"] = "1"
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    env.setdefault("OMP_NUM_THREADS", str(max(1, cpus // launch.processes)))
    env["TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE"] = RANK_PREFIX
    return {**env, **launch.env}


def child_threads(launch: LaunchSettings) -> int | None:
    """The intra-op threads torch starts with in each of `launch`'s processes: the first number of
    their OMP_NUM_THREADS (`child_env`), which torch, OpenMP and MKL read when a process starts;
    None when that is not a positive number (then they choose their own)."""
    value = child_env(launch).get("OMP_NUM_THREADS", "")
    try:
        threads = int(value.split(",")[0])
    except ValueError:
        return None
    return threads if threads > 0 else None


_threads_lock = threading.Lock()
_threads_state = {"holders": 0, "before": 0}  # trainings in this process holding the count; the count before


@contextlib.contextmanager
def threads_of_a_child(launch: LaunchSettings):
    """Train in this process with torch's intra-op thread count a 1-process child of `launch`
    would start with (`child_threads`), restored afterwards: the count changes how reductions
    split their work and so the last bits of the weights (3e-7 for the progress model at 2
    threads against 1, docs/scaling.md). This process's count is not the child's: OpenMP and
    MKL size their pools when torch first computes, from OMP_NUM_THREADS as it was then (a
    pytest worker or a Prefect worker that computed before has the machine's cores), and a
    library may have called `torch.set_num_threads`. Trainings at once in this process (a
    thread-pool task runner) share the count; the last to finish restores it."""
    import torch

    threads = child_threads(launch)
    if threads is None:
        yield
        return
    with _threads_lock:
        if _threads_state["holders"] == 0:
            _threads_state["before"] = torch.get_num_threads()
            torch.set_num_threads(threads)
        _threads_state["holders"] += 1
    try:
        yield
    finally:
        with _threads_lock:
            _threads_state["holders"] -= 1
            if _threads_state["holders"] == 0:
                torch.set_num_threads(_threads_state["before"])


# -- checks before any work ----------------------------------------------------------------------------
def devices_here() -> tuple[int, int]:
    """(CUDA GPUs, CPUs usable by this process); GPUs counted without importing torch when nvidia-smi exists."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return len([d for d in visible.split(",") if d.strip() and d.strip() != "-1"]), cpus
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return 0, cpus
    try:
        out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return 0, cpus
    return sum(1 for line in out.stdout.splitlines() if line.startswith("GPU ")), cpus


def check_processes(launch: LaunchSettings, field: str, devices: tuple[int, int] | None = None) -> None:
    """More processes than this node has GPUs (or, without GPUs, CPUs) is refused."""
    gpus, cpus = devices or devices_here()
    have, what = (gpus, "GPUs") if gpus else (cpus, "CPUs (no GPU)")
    if launch.processes > have:
        raise InputError(
            f"{field}.processes",
            f"is {launch.processes} but this machine has {have} {what}",
            f"set {field}.processes to at most {have} (one process per GPU)",
        )


def check_nodes(launch: LaunchSettings, field: str) -> None:
    if launch.nodes > 1 and launch.rdzv is None:
        raise InputError(
            f"{field}.rdzv",
            f"is not set but nodes is {launch.nodes}: the nodes cannot find each other",
            f"set {field}.rdzv.endpoint to host:port of the first node (and the same rdzv.id on every node)",
        )
    if launch.rdzv is not None and launch.rdzv.backend == "static" and launch.nodes > 1:
        if launch.rdzv.node_rank is None:
            raise InputError(
                f"{field}.rdzv.node_rank", "is not set but the static backend needs it", "give this node's rank"
            )


IMPORT_CHECK = "import importlib.util, sys; sys.stdout.write(','.join(m for m in sys.argv[1:] if importlib.util.find_spec(m) is None))"


def check_python(launch: LaunchSettings, field: str, needed: tuple[str, ...] = NEEDED_PACKAGES) -> None:
    """`launch.python` exists, runs, and finds every package the worker imports (one short child)."""
    if launch.python is None:
        return
    python = shutil.which(launch.python) or launch.python
    if not Path(python).is_file() or not os.access(python, os.X_OK):
        raise InputError(
            f"{field}.python",
            f"{launch.python} is not an executable file",
            "give the python of the training environment (e.g. /opt/train-venv/bin/python), or null for Dojoflow's",
        )
    try:
        out = subprocess.run(
            [python, "-c", IMPORT_CHECK, *needed], capture_output=True, text=True, timeout=120, env=child_env(launch)
        )
    except (OSError, subprocess.SubprocessError) as e:
        raise InputError(f"{field}.python", f"{launch.python} does not run ({e})", "give a working python") from e
    if out.returncode != 0:
        last = (out.stderr.strip().splitlines() or ["no output"])[-1]
        raise InputError(f"{field}.python", f"{launch.python} fails to start ({last})", "give a working python")
    missing = [m for m in out.stdout.strip().split(",") if m]
    if missing:
        raise InputError(
            f"{field}.python",
            f"{launch.python} lacks {', '.join(missing)}, which training needs",
            f"install them in that environment (`{launch.python} -m pip install {' '.join(missing)}`, "
            "or `pip install 'dojoflow[train-vllm]'` there: docs/scaling.md)",
        )


def check_distributed_training(training: dict[str, Any], launch: LaunchSettings, field: str, cuda: bool) -> None:
    """FSDP and DeepSpeed (`training:` keys) only where they can run: FSDP needs CUDA GPUs
    (transformers' FSDP on CPU is not supported for training here), DeepSpeed its package."""
    if training.get("fsdp") and not cuda:
        raise InputError(
            f"{field}.training.fsdp",
            "asks for FSDP but this machine has no CUDA GPU (FSDP shards over GPUs)",
            f"remove {field}.training.fsdp, or run this step on GPUs with {field}.launch.processes set to their count",
        )
    if training.get("use_vllm") and not cuda:
        raise InputError(
            f"{field}.training.use_vllm",
            "is true but this machine has no CUDA GPU, which vLLM needs",
            "set use_vllm to false (generation then uses transformers), or run this step on a GPU machine",
        )
    if training.get("deepspeed"):
        import importlib.util

        if importlib.util.find_spec("deepspeed") is None and launch.python is None:
            raise InputError(
                f"{field}.training.deepspeed",
                "asks for DeepSpeed but the deepspeed package is not installed",
                "pip install deepspeed in the training environment (or give launch.python of one that has it)",
            )


def check_launch(
    launch: LaunchSettings,
    field: str,
    devices: tuple[int, int] | None = None,
    needed: tuple[str, ...] = NEEDED_PACKAGES,
) -> None:
    """Everything about `launch` that can be refused before any work: one InputError naming the field.
    `needed`: the packages `launch.python` must find (vllm too with `training.use_vllm`)."""
    check_nodes(launch, f"{field}.launch")
    check_processes(launch, f"{field}.launch", devices)
    check_python(launch, f"{field}.launch", needed)
