"""How many slots of Prefect's global concurrency limits a task takes (docs/scaling.md,
"Concurrency limits"). Plain functions: the `with concurrency(...)` itself is in
tasks/prefect_tasks/limits.py, around the @task wrappers.

- `gpu`: a training task takes one slot per GPU its processes use on this node, i.e.
  `launch.processes` (one process per GPU; 1 for in-process training) when this node has a
  CUDA GPU, and **none (0) on a CPU-only node**: CPU training is bounded by cores, not by the
  GPU limit, and a CPU-only server may have no `gpu` limit at all.
- `lean`: a Lean verification task (proving, search, whole-proof sampling) takes one slot per
  Lean process its backend runs (`backend.workers`), none for a backend that runs no Lean
  (`replay`, the lower bound that reads traced steps from the store).
- `trace`: an ingest task (which traces its repository) takes one slot.

Importing this module imports no torch and no Prefect.
"""

from __future__ import annotations

GPU, LEAN, TRACE = "gpu", "lean", "trace"


def gpu_slots(settings, devices: tuple[int, int] | None = None) -> int:
    """Slots of `gpu` a training step with trainer settings `settings` takes on this node.
    `devices`: (CUDA GPUs, CPUs), by default counted here (tasks/trainers/launch.py `devices_here`)."""
    from tasks.trainers.launch import devices_here, launch_of

    gpus, _ = devices or devices_here()
    return launch_of(settings).processes if gpus else 0


def lean_slots(settings) -> int:
    """Slots of `lean` a task checking proofs with `settings` (a ProvingSettings, or anything with a
    `backend`: BackendSettings) takes: its Lean processes, 0 for a backend that runs no Lean."""
    from tasks.lean.registry import get as backend_def

    backend = getattr(settings, "backend", settings)
    if backend is None or backend_def(backend.kind).lower_bound:
        return 0
    return backend.workers


def trace_slots() -> int:
    """Slots of `trace` an ingest task takes: one repository traced at a time per slot."""
    return 1
