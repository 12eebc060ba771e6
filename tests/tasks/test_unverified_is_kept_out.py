"""`unverified` (a backend finished a proof but cannot establish the verdict rule: the Dojo)
is neither a proof nor a failure (issue 16 §1): it stays out of pass@k, its interval and its
count, out of rewards (None: TRL leaves it out of the advantages), and out of `dojoflow
prove`'s proved list and patches, listed apart.

    PYTHONPATH=$PWD HF_HUB_OFFLINE=1 python -m pytest tests/tasks/test_unverified_is_kept_out.py -q
"""

from __future__ import annotations

import json

import pytest

from tasks.grpo.config import PRESET_VALUES, RewardSettings
from tasks.grpo.evaluate import pass_at, pass_metrics
from tasks.grpo.rewards import LeanProofReward, LeanRewarder, LeanTacticReward
from tasks.lean.backend import ProofCheck, ProofState, TacticResult, TheoremSpec
from tasks.proving.config import ProvingSettings
from tasks.proving.evaluate import _theorem_record, proving_metrics, theorem_scores
from tasks.search.result import SearchResult
from tasks.stats import interval_fields

SPEC = TheoremSpec("r", "https://x.invalid/r", "0" * 40, "F.lean", "T.t", "theorem t (n : Nat) : n + 0 = n", (1, 1))


def _record(name: str, n: int, c: int, unverified: int = 0) -> dict:
    return {
        "repo_id": "r",
        "theorem_id": name,
        "checker": "replay",
        "split": "test",
        "n": n,
        "c": c,
        "errors": 0,
        "unverified": unverified,
        "expansions": 1.0,
        "seconds": 1.0,
        "full_name": name,
        "proof": ["simp"] if c else None,
        "error": None,
    }


def test_proving_pass_at_k_leaves_out_a_theorem_whose_only_proofs_were_unverified():
    settings = ProvingSettings(attempts=2, k=2, generator={"decoding": "sample"})
    records = [_record("T.a", 2, 1), _record("T.b", 2, 0), _record("T.c", 2, 0, unverified=2)]
    assert theorem_scores(records[2], settings) is None
    assert theorem_scores(records[1], settings) == {1: 0.0, 2: 0.0}
    rows = {m.metric: m for m in proving_metrics(records, settings)}
    assert (rows["replay_pass@1"].value, rows["replay_pass@1"].count) == (pytest.approx(0.25), 2)
    assert rows["proving_unverified"].value == 1.0 and rows["proving_not_started"].value == 0.0


def test_a_search_record_with_unverified_proofs_only_counts_them_apart():
    found = SearchResult("T.c", "unverified", checker="leandojo", unverified=("simp",))
    theorem = {"repo_id": "r", "theorem_id": "t", "split": "test", "full_name": "T.c"}
    record = _theorem_record(theorem, [found], "leandojo", "g", "w")
    assert record.unverified == 1 and record.c == 0 and record.proof is None


def test_grpo_pass_at_k_its_interval_and_count_agree_on_the_theorems_they_count():
    """Issue 16 review: the interval took in the unverified theorem (as a 0) while the mean left it out."""
    results = [{"n": 2, "proved": 1}, {"n": 2, "proved": 0}, {"n": 2, "proved": 0, "unverified": 2}]
    assert pass_at(results, 1) == pytest.approx(0.25)
    (row,) = pass_metrics(results, [1], "r", "test", "leandojo")
    assert row.value == pytest.approx(0.25) and row.count == 2
    want = interval_fields([0.5, 0.0])
    assert (row.ci_low, row.ci_high) == (want["ci_low"], want["ci_high"])
    # a theorem proved once is counted even if other proofs were unverified
    assert pass_at([{"n": 2, "proved": 1, "unverified": 1}], 1) == pytest.approx(0.5)


class Dojo:
    """A backend that finishes proofs but reports no axioms (the Dojo's ProofCheck: no answers)."""

    name = "leandojo"

    def start(self, theorem):
        return TacticResult("state", ProofState("0", "n : Nat\n⊢ n + 0 = n"))

    def run_tactic(self, theorem, state, tactic):
        return TacticResult("finished")

    def check_proof(self, theorem, proof):
        return ProofCheck(True, self.name, ())

    def close(self):
        pass


@pytest.mark.parametrize("preset", [None, *PRESET_VALUES])
def test_an_unverified_proof_gets_no_reward_under_any_preset(preset):
    settings = RewardSettings(**PRESET_VALUES[preset]) if preset else RewardSettings()
    rewarder = LeanRewarder(Dojo(), settings)
    spec = json.dumps(SPEC.__dict__)
    try:
        assert LeanProofReward(rewarder)([[]], ["simp"], theorem=[spec]) == [None]
        assert LeanTacticReward(rewarder)([[]], ["simp"], theorem=[spec], prefix=["[]"]) == [None]
    finally:
        rewarder.close()
    assert rewarder.stats["unverified"] == 2


def test_dojoflow_prove_lists_unverified_theorems_apart_from_the_proved_ones():
    from tasks.proving.sorry import prove_result

    records = [_record("T.a", 1, 1), _record("T.c", 1, 0, unverified=1)]
    summary = prove_result("run", records, [])
    assert summary["proved"] == ["T.a"] and summary["unverified"] == ["T.c"]
