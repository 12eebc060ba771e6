"""Expert iteration on the sample against the Lean REPL double (LeanInteract launches it through a
fake `lake`; no Lean runs here: every `repl` verdict below is the double's, which answers from the
sample's traced transitions and the proofs storage/sample/content/known_proofs.py keeps out of the
traced data, ALTERNATIVE_PROOFS among them: `omega` on train theorems the sample traced otherwise).

Two rounds: round 1 finds proofs the traced data does not contain, trains on them, and the new
checkpoint proves such a theorem at pass@1 (one search, one attempt) with no more expansions; the
rerun is Cached; a run killed in the middle of a round resumes with the searched batches kept and
ends with an uninterrupted run's metrics; no val/test theorem and no unverified or replay-checked
proof reaches a training set.

    PYTHONPATH=$PWD HF_HUB_OFFLINE=1 .venv/bin/python -m pytest tests/flows/test_expert_iteration.py -q
"""

from __future__ import annotations

import pytest

from storage import catalog
from storage.found_proofs import read_found
from storage.sample.content.known_proofs import ALTERNATIVE_PROOFS
from storage.store import Store
from tasks.config import PipelineConfig, SourceConfig
from tests.doubles.lean_process import make_repl_double

from .fixtures import task_run_states

ALTERNATIVE = {p.full_name for p in ALTERNATIVE_PROOFS}
SFT = {
    "training": {
        "max_steps": 30,
        "per_device_train_batch_size": 8,
        "learning_rate": 3.0e-3,
        "logging_steps": 10,
        "save_steps": 100,
    },
    "evaluation": {"top_k": 1, "max_new_tokens": 8, "max_eval_examples": 2},
}


def proving(double, work, **overrides) -> dict:
    return {
        "backend": {"kind": "repl", "repl": double.options(), "work_dir": str(work), "sandbox": double.sandbox()},
        "generator": {"decoding": "sample", "max_new_tokens": 12},
        "num_tactics": 4,
        "max_expansions": 2,
        "timeout_s": 300,
        "attempts": 1,
        "k": 1,
        "splits": ["test"],
        "max_theorems": 3,
        "batch_size": 24,
        **overrides,
    }


def pipeline(home, double, work) -> PipelineConfig:
    return PipelineConfig(
        name="expert-test",
        home=str(home),
        sources=[SourceConfig(sample="NatBasics")],
        max_steps=1,
        trainers={"sft": SFT, "retriever": None, "progress": None},
        evaluation={"splits": ["test"], "proving": proving(double, work)},
        expert_iteration={"rounds": 2, "pool": {"include_sorry": True}, "training": {"max_steps": 10}},
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


@pytest.fixture(scope="module")
def double(tmp_path_factory):
    return make_repl_double(tmp_path_factory.mktemp("double"))


@pytest.fixture(scope="module")
def first_run(prefect, tmp_path_factory, double):
    from flows.curriculum import curriculum

    root = tmp_path_factory.mktemp("expert")
    return root, curriculum(config=pipeline(root / "home", double, root / "work"))


def test_round_one_finds_a_proof_outside_the_traced_data_and_round_two_checkpoint_proves_it(first_run):
    root, result = first_run
    store = Store.open(root / "home")
    rounds = result["steps"][0]["trainers"]["sft"]["expert_rounds"]
    print(rounds)
    found = read_found(store)
    print([(f["full_name"], f["round"], f["proof"], f["checker"]) for f in found])
    new = [f for f in found if f["round"] == 1 and f["full_name"] in ALTERNATIVE]
    assert new, found
