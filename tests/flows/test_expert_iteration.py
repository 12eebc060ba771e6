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

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from storage import catalog
from storage.found_proofs import read_found
from storage.sample.content.known_proofs import ALTERNATIVE_PROOFS
from storage.store import Store
from tasks.config import PipelineConfig, SourceConfig
from tests.doubles.lean_process import make_repl_double

from .fixtures import libraries_frozen, task_run_states

ALTERNATIVE = {p.full_name for p in ALTERNATIVE_PROOFS}
ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "expert-iteration.yaml"


def pipeline(home, double, work) -> PipelineConfig:
    """examples/expert-iteration.yaml, smaller (one repository, one step, fewer steps and theorems),
    with the Lean-process double behind its `repl` backend. One expansion per search: every proof
    these settings find is one tactic found at the first expansion (the alternative proofs are
    `omega`); a second expansion only searched on, for seconds per round, what was never proved.
    A round's pool is 36 of NatBasics' 71 train theorems (`pool.max_theorems`, chosen by theorem id):
    two search batches of 24 (the killed run needs a second one), half the search of all 71. Sampling
    decides what a round proves: with 36, round 1 finds an alternative proof that the round-2
    checkpoint proves at pass@1 (with 28, 32, 40, 48 or 56 one of those two did not happen)."""
    config = PipelineConfig.from_yaml(EXAMPLE)
    sft = config.trainers.sft.model_dump()
    sft["training"].update(max_steps=30, logging_steps=10)
    sft["evaluation"].update(top_k=1, max_new_tokens=8, max_eval_examples=2)
    proving = config.evaluation.proving.model_dump()
    proving.update(
        backend={"kind": "repl", "repl": double.options(), "work_dir": str(work), "sandbox": double.sandbox()},
        num_tactics=4, max_expansions=1, attempts=1, k=1, splits=["test"], max_theorems=3, batch_size=24,
    )  # fmt: skip
    proving["generator"]["max_new_tokens"] = 12
    ei = config.expert_iteration.model_dump()
    ei["training"] = {"max_steps": 5}
    ei["pool"]["max_theorems"] = 36
    return config.with_overrides(
        {
            "name": "expert-test",
            "home": str(home),
            "sources": [SourceConfig(sample="NatBasics")],
            "max_steps": 1,
            "trainers": {**config.trainers.model_dump(), "sft": sft},
            "evaluation": {**config.evaluation.model_dump(), "proving": proving},
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

    root = tmp_path_factory.mktemp("expert")
    return root, curriculum(config=pipeline(root / "home", double, root / "work"))


def test_round_one_finds_a_proof_outside_the_traced_data_and_round_two_checkpoint_proves_it(first_run, double):
    from tasks.proving.evaluate import prove_theorems

    root, result = first_run
    store = Store.open(root / "home")
    rounds = result["steps"][0]["trainers"]["sft"]["expert_rounds"]
    assert [r["round"] for r in rounds] == [1.0, 2.0] and rounds[0]["newly_proved"] >= 1
    assert rounds[1]["proved_so_far"] == rounds[0]["proved_so_far"] + rounds[1]["newly_proved"]
    traced = {(r["full_name"], r["tactic"]) for r in store.read_table("tactics").to_pylist()}
    new = [f for f in read_found(store) if f["round"] == 1 and f["full_name"] in ALTERNATIVE]
    assert new, "round 1 found no proof outside the traced data"
    f = new[0]
    # no comparator here: the proof is elaborator-checked, and its checker says so (tasks/lean/gold_backend.py)
    assert f["checker"] == "repl+elaborator_checked" and f["verdict"] == "proved" and f["steps"][0]["tactic"] == "omega"
    assert (f["full_name"], "omega") not in traced  # not in the traced data
    # round 1 trained on it: the pair is in the round's training snapshot
    extra = store.root / "snapshots" / rounds[0]["trained"]["snapshot_id"] / "extra-train-tactics.parquet"
    rows = pq.read_table(extra).to_pylist()
    assert any(r["full_name"] == f["full_name"] and r["tactic"] == "omega" for r in rows)
    # the last round's checkpoint proves it at pass@1 (one attempt), with no more expansions
    last = rounds[-1]["trained"]
    settings = pipeline(root / "home", double, root / "work").evaluation.proving
    from tasks.lean import load_theorems
    from tasks.proving.evaluate import theorem_to_try

    (theorem,) = [t for t in load_theorems(store, [f["repo_id"]]) if t.full_name == f["full_name"]]
    (record,) = prove_theorems(store, settings, last["path"], [theorem_to_try(theorem, "train", "")])
    assert record.c == 1 and record.n == 1, record
    assert record.proof_expansions <= f["expansions"]


def test_rerun_is_cached_and_records_the_same_round_metrics(first_run, double):
    from flows.curriculum import curriculum

    root, first = first_run
    second = curriculum(config=pipeline(root / "home", double, root / "work"))
    states = task_run_states([second["run_id"]], "expert-search")
    assert states and all(state == "Cached" for _, state in states), states
    store = Store.open(root / "home")
    assert ei_metrics(store, second["run_id"]) == ei_metrics(store, first["run_id"])


def test_no_val_test_theorem_nor_unverified_or_replay_proof_enters_a_training_set(first_run):
    import pyarrow as pa

    from storage.found_proofs import record_found
    from storage.schemas import SNAPSHOT_TACTICS
    from tasks.expert.data import training_rows

    root, result = first_run
    store = Store.open(root / "home")
    found = read_found(store)
    splits = {r["theorem_id"]: r["split_random"] for r in store.read_table("theorems").to_pylist()}
    assert found and all(
        splits[f["theorem_id"]] == "train" and f["checker"] == "repl+elaborator_checked" for f in found
    )
    # every round's training set: traced train rows plus found proofs of train theorems only
    for r in result["steps"][0]["trainers"]["sft"]["expert_rounds"]:
        manifest = store.root / "snapshots" / r["trained"]["snapshot_id"] / "extra-train-tactics.parquet"
        extra = pq.read_table(manifest).to_pylist()
        assert all(splits[x["theorem_id"]] == "train" for x in extra)
        assert {x["theorem_id"] for x in extra} <= {f["theorem_id"] for f in found}
    # a found row that is not a verified train proof is refused, whatever let it through upstream
    good = found[0]
    val = next(t for t, s in splits.items() if s == "val")
    bad = [
        {**good, "theorem_id": val},  # a val theorem
        {**good, "checker": "replay"},  # replay-checked
        {**good, "verdict": "unverified"},  # the Dojo without a re-check
    ]
    traced = pa.Table.from_pylist([], schema=SNAPSHOT_TACTICS)
    rows, counts = training_rows(bad, traced, {good["theorem_id"]}, 1.0)
    assert rows.num_rows == 0 and counts["refused"] == 3
    for row in ({**good, "split": "val"}, {**good, "checker": "replay"}, {**good, "verdict": "unverified"}):
        with pytest.raises(ValueError):
            record_found(store, [row])


def _wait_for(condition, what: str, proc, ceiling: float = 900.0):
    """Poll an event (not a duration): the ceiling only stops a hung test."""
    deadline = time.monotonic() + ceiling
    while not condition():
        assert proc.poll() is None, f"the run exited ({proc.returncode}) before {what}"
        assert time.monotonic() < deadline, f"no {what} after {ceiling} s"
        time.sleep(0.2)


def test_a_run_killed_mid_round_resumes_with_searched_batches_kept_and_ends_as_an_uninterrupted_run(
    first_run, double, tmp_path
):
    from prefect.settings import PREFECT_API_URL

    from flows.curriculum import curriculum

    root, uninterrupted = first_run
    home, work = tmp_path / "home", tmp_path / "work"
    keys = home / "prefect" / "cache-keys"
    searched = lambda: sorted(p.name for p in keys.glob("expert-search-*")) if keys.is_dir() else []  # noqa: E731
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "PREFECT_API_URL": PREFECT_API_URL.value(),
        "PREFECT_LOGGING_LEVEL": "WARNING",
        "PREFECT_TASK_RUNNER_THREAD_POOL_MAX_WORKERS": "1",  # batches one after another: a kill lands mid-round
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.flows.expert_run", str(home), str(work), str(double.lake_path.parent.parent)],
        env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        _wait_for(lambda: len(searched()) >= 1, "searched batch", proc)  # the first batch of round 1 is done
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    done = searched()
    rerun = curriculum(config=pipeline(home, double, work))
    states = [s for _, s in task_run_states([rerun["run_id"]], "expert-search[step 1 round 1 ")]
    assert len(states) > len(done) >= 1  # killed in the middle of round 1
    assert states.count("Cached") == len(done)  # the batches searched before the kill are not searched again
    assert ei_metrics(Store.open(home), rerun["run_id"]) == ei_metrics(
        Store.open(root / "home"), uninterrupted["run_id"]
    )


def test_a_new_run_can_continue_from_the_last_round_and_carry_proofs_to_a_new_commit(first_run, double):
    from dataclasses import replace

    from tasks.checkpoints import StartingPoints, plan_step
    from tasks.expert import pool, steps
    from tasks.lean import load_theorems
    from tasks.proving.evaluate import theorem_to_try

    root, result = first_run
    store = Store.open(root / "home")
    rounds = result["steps"][0]["trainers"]["sft"]["expert_rounds"]
    last = steps.last_round_checkpoint(store, str(root / "home"), "sft")
    assert last.checkpoint_id == rounds[-1]["trained"]["checkpoint_id"]
    config = pipeline(root / "home", double, root / "work")
    plan = plan_step("sft", config.trainers.sft, "any-snapshot", StartingPoints(previous={"sft": last}))
    assert plan.parent.checkpoint_id == last.checkpoint_id  # the nightly's first step trains from it

    # a proof found at this commit carries to a new commit of the same theorem, once the verifier
    # accepts it again there; a changed statement is searched afresh
    f = next(f for f in read_found(store) if f["full_name"] in ALTERNATIVE)
    (spec,) = [t for t in load_theorems(store, [f["repo_id"]]) if t.full_name == f["full_name"]]
    moved = theorem_to_try(spec, "train", "").but(theorem_id="theorem-at-a-new-commit", toolchain=f["toolchain"])
    search = config.evaluation.proving
    carried = pool._carry_over(store, search, [moved])
    assert carried["theorem-at-a-new-commit"]["checker"] == "repl+elaborator_checked"
    assert carried["theorem-at-a-new-commit"]["tactics"] == f["tactics"]
    changed = moved.but(statement=replace(spec, statement=spec.statement + " ∧ True").statement)
    assert pool._carry_over(store, search, [changed]) == {}


def test_terminal_and_report_show_each_round_with_proofs_found_and_pass_at_k(first_run):
    from rich.console import Console

    from flows.cli.terminal import print_summary
    from storage.metrics import of_run

    root, result = first_run
    store = Store.open(root / "home")
    console = Console(record=True, width=100)
    print_summary(console, result, of_run(store, result["run_id"]), None)
    text = console.export_text()
    for r in (1, 2):
        line = next(x for x in text.splitlines() if x.startswith(f"expert iteration step 1 round {r}:"))
        assert "newly proved" in line and "proved so far" in line and "test repl+elaborator_checked_pass@1=" in line, (
            line
        )
    report = Path(result["report"]).read_text()
    assert "## Expert iteration" in report and "| 1 | 2 |" in report
    assert (Path(result["report"]).parent / "expert-iteration.png").is_file()  # proved so far over rounds
    from tasks.report import inline_plot

    inlined = inline_plot(report, Path(result["report"]).parent / "metrics.png")
    assert "](expert-iteration.png)" not in inlined and "data:image/png;base64," in inlined  # the UI's copy
