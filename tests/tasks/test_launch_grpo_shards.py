"""GRPO in 2 torchrun processes (gloo, CPU) against 1 process, same seed and global batch: what
holds although the weights cannot be compared (docs/scaling.md, "Why GRPO's 2-versus-1 weights
cannot be compared"): each step, the ranks' prompts are contiguous, disjoint slices of the one
global batch a single process trains on (same prompts, same order), every prompt gets
`num_generations` completions in all, a group split over the ranks gets advantages computed over
the whole group, and rank 0 alone publishes the checkpoint.

Observed through tests/tasks/grpo_probe.py, which records (and changes nothing of) what TRL's
real generation, reward gathering and advantages give `LeanGRPOTrainer` on each rank, and which
rank's publish wrote. The 2-process run goes through Dojoflow's launcher (`call_in_child`, the
worker's `entry`) as `dojoflow grpo train --processes 2` does.
"""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import pytest
import torch

from storage.snapshot import build_snapshot
from tasks.grpo.config import GRPOSettings
from tasks.grpo.train import train_grpo
from tasks.trainers.launch import LaunchSettings
from tasks.trainers.supervise import call_in_child
from tests.doubles.sample_store import sample_store
from tests.tasks.grpo_probe import recording, records

pytestmark = pytest.mark.slow

GENERATIONS = 4
PER_RANK = 6  # completions per rank and step: 2 x 6 = 12 = 3 prompts x 4; the middle prompt's group spans both ranks
STEPS = 2


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def settings(per_device: int, **algorithm) -> dict:
    return {
        **algorithm,
        "max_prompts": 8,
        "rewards": {"lean_tactic": 1.0, "format": 0.1},  # format varies among the tiny model's completions
        "training": {
            "max_steps": STEPS,
            "num_generations": GENERATIONS,
            "per_device_train_batch_size": per_device,
            # TRL's generation batch is global (per-device x processes x steps_per_generation unless
            # given); given, the per-device 6 of 2 ranks may hold half a group, which Dojoflow's check
            # of per-device x steps_per_generation would otherwise refuse
            "generation_batch_size": 2 * PER_RANK,
            "max_completion_length": 8,
            "save_strategy": "no",
            "seed": 0,
        },
    }


def group_advantages(rewards: list[float], size: int) -> list[float]:
    """TRL 1.16's advantages of `grpo` (scale_rewards "group", grpo_trainer.py:2765-2785): each
    group's rewards minus its mean, over its std (Bessel-corrected, TRL's `nanstd`) + 1e-4."""
    out = []
    for g in range(0, len(rewards), size):
        group = rewards[g : g + size]
        mean = sum(group) / len(group)
        std = math.sqrt(sum((r - mean) ** 2 for r in group) / (len(group) - 1))
        out += [(r - mean) / (std + 1e-4) for r in group]
    return out


def batches(recorded: list[dict]) -> list[dict]:
    return [r for r in recorded if "batch" in r]


def _assert_whole_group_advantages(ranks: dict[int, list[dict]], step: int) -> bool:
    """Each rank's advantages are its slice of advantages over the whole global batch's groups.
    Whether that could be told from advantages over each rank's part of the middle group (the one
    that spans both ranks): true when the two halves' rewards make them differ."""
    rewards = batches(ranks[0])[step]["rewards"]
    assert batches(ranks[1])[step]["rewards"] == rewards  # both ranks hold the gathered global rewards
    whole = group_advantages(rewards, GENERATIONS)
    for r in (0, 1):
        mine = batches(ranks[r])[step]["advantages"]
        assert mine == pytest.approx(whole[r * PER_RANK : (r + 1) * PER_RANK], abs=1e-5)
    middle = slice(PER_RANK - GENERATIONS // 2, PER_RANK + GENERATIONS // 2)
    half = GENERATIONS // 2
    per_rank = group_advantages(rewards[middle], half)  # what rank-local groups would give
    return any(abs(a - b) > 1e-3 for a, b in zip(per_rank, whole[middle]))


def _snapshot(tmp_path: Path):
    store = sample_store(tmp_path / "home")
    repo = next(r["repo_id"] for r in store.repositories() if r["name"] == "NatBasics")
    return build_snapshot(store, [repo])


DGPO = {"algorithm": "dgpo", "algorithm_config": {"advantage_norm": "rank"}}
DGPO_STEPS = 1


def _run(root: Path, name: str, snapshot, fields: dict, models: Path) -> dict:
    """`train_recorded`'s keywords of one recorded run under <root>: records in <root>/<name>-records."""
    return {
        "record_dir": str(root / f"{name}-records"),
        "settings": fields,
        "snapshot": snapshot.to_dict(),
        "out_dir": str(root / name),
        "work_dir": str(root / f"work-{name}"),
        "model_cache_dir": str(models),
    }


@pytest.fixture(scope="module")
def launched(tmp_path_factory) -> dict:
    """GRPO in 2 processes launched as `dojoflow grpo train --processes 2` launches them (`call_in_child`,
    the worker's `entry`), twice in the same 2 processes (one launch: each process pays its imports
    of torch, transformers and TRL once): the plain run that one process's run is compared with,
    then DGPO with rank advantages, 1 step. Asserts the launch's figures."""
    root = tmp_path_factory.mktemp("grpo-shards")
    snapshot, models = _snapshot(root), root / "models"
    dgpo = settings(PER_RANK, **DGPO)
    dgpo["training"]["max_steps"] = DGPO_STEPS
    runs = [_run(root, "two", snapshot, settings(PER_RANK), models), _run(root, "dgpo", snapshot, dgpo, models)]
    entry = "tests.tasks.grpo_probe:train_recorded_runs"  # the worker's `entry`: train_grpo, recorded, per run
    with pytest.MonkeyPatch.context() as mp:  # a module fixture runs before the autouse `_offline`
        mp.setenv("OMP_NUM_THREADS", "1")
        mp.setenv("HF_HUB_OFFLINE", "1")
        figures = call_in_child(
            "grpo", entry, {"runs": runs}, root / "two", root / "work-launch", launch=LaunchSettings(processes=2)
        )
    assert figures["world_size"] == 2 and [f["steps"] for f in figures["runs"]] == [STEPS, DGPO_STEPS]
    return {"root": root, "snapshot": snapshot, "models": models, "figures": figures["runs"]}


def _train_one_and_two(launched: dict, tmp_path: Path) -> tuple[dict, dict]:
    """GRPO's records in one process (this one) and in the 2 launched processes; asserts their figures."""
    with recording(tmp_path / "one-records"):  # one process, in this process: the global batch each step
        one_figures = train_grpo(
            GRPOSettings.model_validate(settings(2 * PER_RANK)),
            launched["snapshot"],
            "random",
            None,
            tmp_path / "one",
            tmp_path / "work-one",
            model_cache_dir=launched["models"],
        )
    assert launched["figures"][0]["steps"] == one_figures["steps"] == STEPS
    return records(tmp_path / "one-records"), records(launched["root"] / "two-records")


def test_two_grpo_ranks_train_disjoint_slices_of_the_one_process_global_batch(launched, tmp_path):
    one, two = _train_one_and_two(launched, tmp_path)
    assert sorted(one) == [0] and sorted(two) == [0, 1]
    assert len(batches(one[0])) == len(batches(two[0])) == len(batches(two[1])) == STEPS
    spanning_with_signal = []
    for step in range(STEPS):
        global_batch = batches(one[0])[step]["prompts"]
        shards = [batches(two[r])[step]["prompts"] for r in (0, 1)]
        assert [batches(two[r])[step]["world"] for r in (0, 1)] == [2, 2]
        assert len(global_batch) == 2 * PER_RANK and [len(s) for s in shards] == [PER_RANK, PER_RANK]
        # rank 0 the first half of one process's batch, rank 1 the second: the same prompts, the same order
        assert shards[0] + shards[1] == global_batch, step
        counts = Counter(shards[0] + shards[1])
        assert set(counts.values()) == {GENERATIONS} and len(counts) == 2 * PER_RANK // GENERATIONS
        assert all(batches(two[r])[step]["generations"] == GENERATIONS for r in (0, 1))
        assert set(shards[0]) & set(shards[1]) == {global_batch[PER_RANK]}  # only the middle group's prompt
        assert Counter(shards[0])[global_batch[PER_RANK]] == GENERATIONS // 2
        spanning_with_signal.append(_assert_whole_group_advantages(two, step))
    # the tiny model's completions differ in format, so at least once the middle group's rewards made
    # whole-group and rank-local advantages differ: the check above could tell them apart
    assert any(spanning_with_signal)
    assert [r["published"] for r in one[0] if "published" in r] == [True]
    assert [r["published"] for r in two[0] if "published" in r] == [True]
    assert [r["published"] for r in two[1] if "published" in r] == [False]
    two_dir = launched["root"] / "two"
    assert (two_dir / "config.json").is_file() and (two_dir / "grpo_history.json").is_file()


def test_dojoflows_own_advantages_and_dgpo_flags_in_two_processes_are_each_ranks_rows(launched):
    """`LeanGRPOTrainer` replaces TRL's advantages (advantage_norm other than standard) and adds
    DGPO's verified flags from TRL's gathered rewards, the whole global batch's rows: each rank
    must keep its own rows, as TRL does (`process_slice`), and DGPO's group ids must be the global
    batch's. Before, every rank kept all 12 advantages and flags (TRL's shuffle of 6 rows then gave
    rank 1 rank 0's), and rank 1 numbered its rows' groups from 0."""
    from tasks.grpo.algorithms import advantages_for, resolve_algorithm

    assert launched["figures"][1]["steps"] == DGPO_STEPS  # its own run, after the plain one (`launched`)
    ranks = records(launched["root"] / "dgpo-records")
    assert sorted(ranks) == [0, 1] and [batches(ranks[r])[0]["world"] for r in (0, 1)] == [2, 2]
    rewards = batches(ranks[0])[0]["rewards"]
    options = {**resolve_algorithm("dgpo", {"advantage_norm": "rank"}).options, "scale_std": True}
    whole = advantages_for(torch.tensor(rewards), GENERATIONS, options).tolist()
    for r in (0, 1):
        batch = batches(ranks[r])[0]
        assert set(batch["rows"].values()) == {PER_RANK}, batch["rows"]  # advantages and dgpo_* included
        assert {"advantages", "dgpo_verified", "dgpo_group"} <= set(batch["rows"])
        assert batch["advantages"] == pytest.approx(whole[r * PER_RANK : (r + 1) * PER_RANK], abs=1e-6)
        # groups of the global batch: rank 0 [0 0 0 0 1 1], rank 1 [1 1 2 2 2 2] (the middle group spans both)
        assert batch["dgpo_group"] == [(r * PER_RANK + i) // GENERATIONS for i in range(PER_RANK)]
