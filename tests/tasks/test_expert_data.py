"""Expert iteration's data rules, as plain functions (no Prefect, no Lean): which found proofs
become training pairs, de-duplication against the traced data, the mixing ratio, and the rows
a round's search may store.

    PYTHONPATH=$PWD HF_HUB_OFFLINE=1 .venv/bin/python -m pytest tests/tasks/test_expert_data.py -q
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from storage.schemas import SNAPSHOT_TACTICS
from tasks.expert.data import training_rows
from tasks.expert.pool import found_rows


def traced(pairs: list[tuple[str, str]]) -> pa.Table:
    return pa.Table.from_pylist(
        [
            {"repo_id": "r", "theorem_id": f"t{i}", "file_path": "F.lean", "full_name": f"n{i}", "idx": 0,
             "num_tactics": 1, "state_before": s, "tactic": t, "state_after": "no goals",
             "annotated_tactic": t, "annotations": []}
            for i, (s, t) in enumerate(pairs)
        ],
        schema=SNAPSHOT_TACTICS,
    )  # fmt: skip


def found(theorem_id: str, steps: list[tuple[str, str]], **kw) -> dict:
    return {
        "theorem_id": theorem_id, "repo_id": "r", "file_path": "F.lean", "full_name": theorem_id,
        "verdict": "proved", "checker": "repl",
        "steps": [{"state_before": s, "tactic": t, "state_after": "no goals"} for s, t in steps], **kw,
    }  # fmt: skip


def test_found_pairs_are_deduplicated_against_traced_data_and_each_other():
    base = traced([("n : Nat\n⊢ n = n", "rfl")])
    rows, counts = training_rows(
        [
            found("a", [("n : Nat\n⊢  n = n", "rfl")]),  # the traced pair, spaced differently: not added
            found("b", [("⊢ x ≤ y", "omega")]),
            found("c", [("⊢ x ≤ y", "omega  ")]),  # the same pair again, from another theorem
        ],
        base,
        {"a", "b", "c"},
        ratio=1.0,
    )
    assert rows.column("tactic").to_pylist() == ["omega"] and counts["duplicate"] == 2


@pytest.mark.parametrize("ratio, traced_rows, expected_repeat", [(0.5, 8, 2), (1.0, 8, 4), (0.01, 8, 1)])
def test_mixing_ratio_repeats_found_pairs_and_never_drops_one(ratio, traced_rows, expected_repeat):
    base = traced([(f"⊢ g{i}", "simp") for i in range(traced_rows)])
    rows, counts = training_rows(
        [found("a", [("⊢ x ≤ y", "omega")]), found("b", [("⊢ y ≤ z", "omega")])], base, {"a", "b"}, ratio
    )
    assert counts["repeat"] == expected_repeat and rows.num_rows == 2 * expected_repeat


def test_only_verified_proofs_of_train_theorems_become_pairs():
    rows, counts = training_rows(
        [
            found("val-theorem", [("⊢ a", "omega")]),  # not in the train split
            found("a", [("⊢ b", "omega")], checker="replay"),  # replay is the traced data, not a verifier
            found("a", [("⊢ c", "omega")], verdict="unverified"),  # the Dojo without a re-check
        ],
        traced([]),
        {"a"},
        ratio=1.0,
    )
    assert rows.num_rows == 0 and counts["refused"] == 3


def _record(**kw) -> dict:
    return {
        "theorem_id": "t", "toolchain": "v4.20.0", "repo_id": "r", "url": "u", "file_path": "F.lean",
        "full_name": "n", "split": "train", "statement": "theorem n : x ≤ y", "checker": "repl",
        "proof": ["intro h", "omega"], "proof_states": ["⊢ a → b", "h : a\n⊢ b"], "goals": "⊢ a → b",
        "axioms": ["propext"], "proof_expansions": 2, **kw,
    }  # fmt: skip


def test_found_rows_keep_the_states_lean_reported_and_skip_what_is_not_a_verified_train_proof():
    (row,) = found_rows([_record()], lower_bound=False, rule_version="2", run_id="x", step=1, round=1,
                        checkpoint_id="c")  # fmt: skip
    assert row["steps"] == [
        {"state_before": "⊢ a → b", "tactic": "intro h", "state_after": "h : a\n⊢ b"},
        {"state_before": "h : a\n⊢ b", "tactic": "omega", "state_after": "no goals"},
    ]
    assert row["verdict"] == "proved" and row["rule_version"] == "2" and row["round"] == 1
    kw = {"rule_version": "2", "run_id": "x", "step": 1, "round": 1, "checkpoint_id": "c"}
    assert found_rows([_record()], lower_bound=True, **kw) == []  # replay's "proofs"
    assert found_rows([_record(split="test")], lower_bound=False, **kw) == []
    assert found_rows([_record(proof=None)], lower_bound=False, **kw) == []
    # a whole proof of several tactics has no states between them: no pairs; of one tactic, one
    whole = found_rows([_record(proof_states=None)], lower_bound=False, **kw)[0]
    one = found_rows([_record(proof=["omega"], proof_states=None)], lower_bound=False, **kw)[0]
    assert whole["steps"] is None and one["steps"][0]["state_before"] == "⊢ a → b"
