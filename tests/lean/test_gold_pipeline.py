"""Where the gold check runs: a proof the elaborator accepts and comparator's kernel replay rejects
is never counted (pass@k), recorded (`proofs`, `found_proofs`), patched or trained on; an honest
proof is, named `kernel_replayed`. Only the Lean side is faked (the REPL double, the comparator
double); search, the proving metrics, the proof rows, the found-proof store, the patch writer and
the expert-iteration training data are Dojoflow's own.

    PYTHONPATH=$PWD python -m pytest tests/lean/test_gold_pipeline.py -q
"""

from __future__ import annotations

import pytest

from tasks.generate.baseline import ClosingTacticsGenerator
from tasks.lean.verified import open_verifier
from tasks.proving.config import ProvingSettings
from tasks.proving.evaluate import _theorem_record, proof_rows, proving_metrics
from tasks.search.best_first import best_first_search_many
from tasks.search.result import SearchBudget
from tests.doubles.comparator_double import runs
from tests.doubles.sample_store import store, theorems  # noqa: F401  (fixtures)
from tests.lean.test_gold_contract import AND_SWAP, KERNEL_CHEAT, lean, settings  # noqa: F401  (fixture)

HONEST_STEPS = ["intro h", "constructor", "exact h.2", "exact h.1"]


def search(store, theorems, tmp_path, lean, tactics):  # noqa: F811
    """One best-first search of and_swap' with a generator proposing `tactics` at every state,
    through the backend every proving run opens (open_verifier), and its theorem record."""
    backend = open_verifier(settings(tmp_path, lean), store)
    generator = ClosingTacticsGenerator(tactics)
    theorem = theorems[AND_SWAP]
    try:
        [result] = best_first_search_many([theorem], backend, generator, SearchBudget(num_tactics=len(tactics)))
    finally:
        backend.close()
    record = _theorem_record(
        {
            "repo_id": theorem.repo_id,
            "split": "test",
            "theorem_id": "t1",
            "file_path": theorem.file_path,
            "full_name": theorem.full_name,
        },
        [result],
        backend.name,
        generator.name,
        "test",
    )
    return result, record


def test_a_cheat_the_elaborator_accepts_is_never_counted_nor_recorded(store, theorems, tmp_path, lean):  # noqa: F811
    result, record = search(store, theorems, tmp_path, lean, [KERNEL_CHEAT])
    assert not result.proved and record.proof is None and runs(lean[1]) >= 1  # it reached comparator
    metrics = {m.metric: m.value for m in proving_metrics([record], ProvingSettings(backend={"kind": "repl"}))}
    assert metrics["repl+kernel_replayed_pass@1"] == 0.0  # counted as a failure, named by its level
    assert proof_rows([record], "run", "ck", "evaluation") == []  # nothing for `proofs`, the patch, the card


def test_an_honest_proof_is_counted_and_recorded_as_kernel_replayed(store, theorems, tmp_path, lean):  # noqa: F811
    result, record = search(store, theorems, tmp_path, lean, HONEST_STEPS)
    assert result.proved and result.checker == "repl+kernel_replayed"
    metrics = {m.metric: m.value for m in proving_metrics([record], ProvingSettings(backend={"kind": "repl"}))}
    assert metrics["repl+kernel_replayed_pass@1"] == 1.0
    [row] = proof_rows([record], "run", "ck", "evaluation")
    assert row["checker"] == "repl+kernel_replayed" and row["proof"] == "\n".join(HONEST_STEPS)


def test_a_found_proof_the_kernel_replay_rejected_cannot_be_stored_for_training(store):  # noqa: F811
    """Expert iteration trains on `found_proofs` only (tasks/expert/data.py): a row whose verdict
    is not `proved` (the gold check's rejection) is refused by the store itself."""
    from storage.found_proofs import record_found

    row = {"full_name": "LogicPuzzles.and_swap'", "verdict": "rejected", "checker": "repl+kernel_replayed"}
    with pytest.raises(ValueError, match="only proofs a verifier called proved"):
        record_found(store, [row])


def test_with_the_gold_check_off_the_same_cheat_counts_and_is_named_elaborator_checked(store, theorems, tmp_path, lean):  # noqa: F811
    """What main at 59c0f46 did for every proof (no kernel replay): the cheat is proved. With the
    gold check off it still is, and every figure says so."""
    off = settings(tmp_path, lean, check="off")
    backend = open_verifier(off, store)
    try:
        [result] = best_first_search_many(
            [theorems[AND_SWAP]], backend, ClosingTacticsGenerator([KERNEL_CHEAT]), SearchBudget(num_tactics=1)
        )
    finally:
        backend.close()
    assert result.proved and result.checker == "repl+elaborator_checked" and runs(lean[1]) == 0


def test_the_card_and_report_notes_say_which_level_each_pass_rate_is():
    from tasks.proving.summary import checker_of, comparability_notes

    metrics = ["repl+kernel_replayed_pass@1", "baseline_repl+elaborator_checked_pass@1"]
    assert checker_of(metrics[0]) == "repl+kernel_replayed"
    notes = comparability_notes(metrics)
    assert any(n.startswith("repl+kernel_replayed: every proof replayed by comparator") for n in notes)
    assert any(n.startswith("repl+elaborator_checked: proofs checked by the elaborator's answers only") for n in notes)
