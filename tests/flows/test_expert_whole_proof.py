"""Whole-proof expert iteration (`expert_iteration.mode: whole_proof`) on the sample and its statement
set against the Lean REPL double (LeanInteract launches it through a fake `lake`; no Lean runs here:
every `repl` verdict below is the double's, which answers from the sample's traced transitions and the
proofs storage/sample/content/known_proofs.py keeps out of the traced data).

Two rounds: sft_proof trains on the traced whole proofs, samples whole proofs for the pool (NatBasics'
train theorems and nat-pset's train statements), keeps at most `keep` verified proofs per statement,
trains on them; statements holding `stop_after` leave the pool; no val/test theorem, no benchmark
statement and no replay or unverified proof reaches a training set; a rerun is Cached. Without Lean
the example refuses in one line (exit 2).

    PYTHONPATH=$PWD HF_HUB_OFFLINE=1 .venv/bin/python -m pytest tests/flows/test_expert_whole_proof.py -q
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from storage import catalog
from storage.proof_snapshot import extra_proofs
from storage.snapshot_ref import SnapshotRef
from storage.store import Store
from storage.whole_proofs import read_whole_proofs, record_whole_proofs
from tasks.config import PipelineConfig, SourceConfig
from tests.doubles.lean_process import make_repl_double

from .fixtures import libraries_frozen, task_run_states

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "whole-proof-expert.yaml"


def pipeline(home, double, work) -> PipelineConfig:
    """examples/whole-proof-expert.yaml, smaller, with the Lean-process double behind its `repl` backend."""
    config = PipelineConfig.from_yaml(EXAMPLE)
    sft = config.trainers.sft_proof.model_dump()
    sft["training"].update(max_steps=30, logging_steps=10, per_device_train_batch_size=8)
    sft["evaluation"].update(k=2, max_theorems=2, max_proof_tokens=12)
    backend = {"kind": "repl", "repl": double.options(), "work_dir": str(work), "sandbox": double.sandbox()}
    proving = config.evaluation.proving.model_dump()
    proving.update(backend=backend, num_tactics=2, k=2, splits=["test"], max_theorems=2, batch_size=32)
    proving["generator"]["max_proof_tokens"] = 12
    ei = config.expert_iteration.model_dump()
    ei["training"] = {"max_steps": 2}  # each round trains (its data is asserted), what it learns is not
    ei["whole_proof"].update(samples=8, keep=2, stop_after=1, max_statements=32)
    ei["search"] = {**proving, "generator": {**proving["generator"], "temperature": 0.6}, "splits": ["train"]}
    ei["evaluate_rounds"] = False  # the proving evaluation of each round is tactic mode's test's; here: time
    return config.with_overrides(
        {
            "name": "whole-proof-expert-test",
            "home": str(home),
            "sources": [SourceConfig(sample="NatBasics")],
            "trainers": {**config.trainers.model_dump(), "sft_proof": sft},
            "evaluation": {**config.evaluation.model_dump(), "proving": None},  # the search is expert_iteration's
            "expert_iteration": ei,
        },
        "test",
    )


def ei_metrics(store: Store, run_id: str) -> list[tuple]:
    return [
        tuple(r.values())
        for r in catalog.query(
            store,
            """SELECT step, metric, value FROM metrics WHERE trainer = 'expert_iteration' AND run_id = $run
               AND metric != 'train_loss' ORDER BY step, checkpoint_id, metric""",
            params={"run": run_id},
        ).to_pylist()
    ]


_libraries_frozen = pytest.fixture(scope="module", autouse=True)(libraries_frozen)  # fixtures.libraries_frozen


@pytest.fixture(scope="module")
def double(tmp_path_factory):
    return make_repl_double(tmp_path_factory.mktemp("double"))


@pytest.fixture(scope="module")
def first_run(prefect, tmp_path_factory, double):
    from flows.curriculum import curriculum

    root = tmp_path_factory.mktemp("whole")
    return root, curriculum(config=pipeline(root / "home", double, root / "work"))


def test_two_rounds_keep_verified_whole_proofs_and_train_sft_proof_on_them(first_run):
    root, result = first_run
    store = Store.open(root / "home")
    rounds = result["steps"][0]["trainers"]["sft_proof"]["expert_rounds"]
    assert rounds[0]["mode"] == "whole_proof" and rounds[0]["proofs_kept"] >= 1, rounds
    assert len(rounds) == 2 or rounds[1]["proofs_kept"] == 0  # round 2 ran (it stops early only on nothing new)
    kept = read_whole_proofs(store)
    assert kept and all(
        r["checker"] == "repl+elaborator_checked" and r["verdict"] == "proved" and r["split"] == "train" for r in kept
    )
    per_key: dict = {}
    for r in kept:
        per_key.setdefault((r["key"], r["toolchain"]), []).append(r)
    assert all(len(v) <= 2 for v in per_key.values())  # keep: 2
    # round 1 trained on them: every kept proof of round 1 is in its training snapshot
    sid = rounds[0]["trained"]["snapshot_id"]
    manifest = store.root / "snapshots" / sid / "manifest.json"
    snap = SnapshotRef(snapshot_id=sid, store_root=str(store.root), repo_ids=(), manifest_path=str(manifest), counts={})
    extra = extra_proofs(snap, "random")
    first = {(r["key"], " ".join(r["proof"].split())) for r in kept if r["round"] == 1}
    assert first <= {(r["key"], " ".join(r["proof"].split())) for r in extra}
    # only train theorems (and train statements of the set) ever reach a training set
    splits = {r["theorem_id"]: r["split_random"] for r in store.read_table("theorems").to_pylist()}
    assert all(splits[r["key"]] == "train" for r in extra if r["kind"] == "repo")
    assert result["steps"][0]["trainers"]["sft_proof"]["expert_rounds"][0]["trained"]["trainer"] == "sft_proof"


def test_a_statement_holding_stop_after_proofs_leaves_the_pool(first_run, double):
    from tasks.expert import whole_proof as wp
    from tasks.expert.pool import PoolRequest

    root, _ = first_run
    store = Store.open(root / "home")
    config = pipeline(root / "home", double, root / "work")
    search = config.expert_search()
    repos = [r["repo_id"] for r in store.repositories()]
    asked = PoolRequest(
        repo_ids=repos, split_kind="random", settings=config.expert_iteration, search=search, step=1, round=9
    )
    pool = wp.select(store, asked)
    kept = {r["key"] for r in read_whole_proofs(store)}
    assert kept and not kept & {t.key for t in pool.theorems}
    assert pool.proved >= len(kept)
    # the set's train statements join the pool, through the sample theorem of the same statement
    sets = [t for t in pool.theorems if t.kind == "statement"]
    assert all(t.repo_id == "statements:nat-pset" and t.via for t in sets)


def test_no_replay_unverified_or_val_proof_is_kept(first_run):
    root, _ = first_run
    store = Store.open(root / "home")
    good = read_whole_proofs(store)[0]
    for bad in ({**good, "checker": "replay"}, {**good, "verdict": "unverified"}, {**good, "split": "val"}):
        with pytest.raises(ValueError):
            record_whole_proofs(store, [bad])


def test_rerun_is_cached_and_records_the_same_round_metrics(first_run, double):
    from flows.curriculum import curriculum

    root, first = first_run
    second = curriculum(config=pipeline(root / "home", double, root / "work"))
    states = task_run_states([second["run_id"]], "expert-wp-search")
    assert states and all(state == "Cached" for _, state in states), states
    store = Store.open(root / "home")
    assert ei_metrics(store, second["run_id"]) == ei_metrics(store, first["run_id"])


def test_without_lean_the_example_refuses_in_one_line(tmp_path):
    path = [d for d in os.environ["PATH"].split(os.pathsep) if not (Path(d) / "lake").exists()]  # no Lean here
    env = {**os.environ, "PATH": os.pathsep.join(path), "DOJOFLOW_HOME": str(tmp_path / "home")}
    done = subprocess.run(
        [sys.executable, "-m", "flows.cli", "run", str(EXAMPLE)], env=env, cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 2, done.stderr
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    assert len(lines) == 1 and "lake" in lines[0], lines


def test_a_statement_set_written_for_another_lean_is_refused_before_any_training(prefect, tmp_path, double):
    """nat-pset's rows say Lean v4.20.0; a backend at v4.9.0 would check (and record) its proofs under the
    wrong toolchain: the run stops once the set is imported, before ingest and training, in one line."""
    from flows.curriculum import curriculum
    from storage.errors import InputError
    from tasks.expert.whole_proof import check_toolchains

    config = pipeline(tmp_path / "home", double, tmp_path / "work")
    ei = config.expert_iteration.model_dump()
    ei["whole_proof"]["lean_version"] = "v4.9.0"
    with pytest.raises(InputError, match=r"whole_proof\.lean_version: is v4\.9\.0, but statement set nat-pset was "):
        curriculum(config=config.with_overrides({"expert_iteration": ei}, "test"))
    store = Store.open(tmp_path / "home")
    assert not store.repositories() and not list(
        (tmp_path / "home").rglob("model.safetensors")
    )  # nothing ingested or trained
    same = config.expert_iteration.model_copy(
        update={"whole_proof": config.expert_iteration.whole_proof.model_copy(update={"lean_version": "v4.20"})}
    )
    check_toolchains(store, same)  # v4.20 covers v4.20.0; an unknown version (null) is not checked
    check_toolchains(store, config.expert_iteration)
