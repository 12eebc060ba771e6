"""How many slots of `gpu`, `lean` and `trace` a task takes (tasks/limits.py; docs/scaling.md)."""

from __future__ import annotations

from tasks.lean.config import BackendSettings
from tasks.limits import gpu_slots, lean_slots, trace_slots
from tasks.proving.config import ProvingSettings
from tasks.sft import SFTSettings
from tasks.trainers.launch import LaunchSettings


def test_training_takes_one_gpu_slot_per_process_on_a_gpu_node_and_none_on_cpu():
    two = SFTSettings(launch=LaunchSettings(processes=2))
    assert gpu_slots(two, devices=(8, 16)) == 2
    assert gpu_slots(SFTSettings(), devices=(1, 16)) == 1  # in-process training uses one GPU
    assert gpu_slots(two, devices=(0, 16)) == 0  # CPU-only: bounded by cores, not by `gpu`


def test_lean_slots_are_the_backend_lean_processes_and_none_for_replay():
    assert lean_slots(ProvingSettings(backend=BackendSettings(kind="repl", workers=3))) == 3
    assert lean_slots(BackendSettings(kind="replay", workers=3)) == 0
    assert trace_slots() == 1
