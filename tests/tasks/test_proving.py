"""The proving evaluation's plain logic: which theorems are tried, the metrics and their
names, proof rows, patch text, and the retrieval-augmented prompt.

    PYTHONPATH=$PWD HF_HUB_OFFLINE=1 .venv/bin/python -m pytest tests/tasks/test_proving.py -q
"""

from __future__ import annotations

import pytest

from storage.proofs import read_proofs, record_proofs
from storage.sample.content.known_proofs import KNOWN_PROOFS
from tasks.generate.base import TacticQuery
from tasks.proving.config import ProvingSettings
from tasks.proving.evaluate import proof_rows, proving_metrics, select_theorems
from tasks.proving.patches import replace_proof
from tests.doubles.sample_store import sample_store


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return sample_store(tmp_path_factory.mktemp("home"))


def test_selection_leaves_out_sorry_theorems_caps_each_repository_and_split_and_is_stable(store):
    settings = ProvingSettings(splits=["train", "test"], max_theorems=4)
    chosen = select_theorems(store, store.repo_ids(), "random", settings).theorems
    assert chosen == select_theorems(store, store.repo_ids(), "random", settings).theorems  # the same every step
    sorry = {r["full_name"] for r in store.read_table("theorems").to_pylist() if r["has_sorry"]}
    assert not {t.full_name for t in chosen} & sorry
    per = {}
    for t in chosen:
        per[(t.repo_id, t.split)] = per.get((t.repo_id, t.split), 0) + 1
    assert set(per) == {(r, s) for r in store.repo_ids() for s in ("train", "test")} and max(per.values()) == 4
    # replay cannot start a term-mode proof, so with replay every chosen theorem has traced goals
    assert all(t.goals for t in chosen)
    more = select_theorems(
        store, store.repo_ids(), "random", ProvingSettings(splits=["train"], max_theorems=8)
    ).theorems
    assert {t.theorem_id for t in chosen if t.split == "train"} <= {t.theorem_id for t in more}


def _record(repo, split, n, c, errors=0, proof=None):
    return {
        "repo_id": repo,
        "split": split,
        "n": n,
        "c": c,
        "errors": errors,
        "expansions": 2.0,
        "seconds": 1.0,
        "theorem_id": f"t{n}{c}{errors}",
        "file_path": "F.lean",
        "full_name": f"T.t{n}{c}",
        "proof": proof,
        "checker": "replay",
        "axioms": [],
        "proof_expansions": 1,
        "proof_seconds": 0.5,
    }


def test_metrics_are_named_by_the_checker_and_errors_count_as_failures_beside_pass_at_k():
    settings = ProvingSettings(attempts=4, k=2, generator={"decoding": "sample"})
    records = [_record("r", "test", 4, 1), _record("r", "test", 4, 0), _record("r", "test", 4, 0, errors=1)]
    rows = {m.metric: (m.value, m.count) for m in proving_metrics(records, settings)}
    assert rows["replay_pass@1"] == (pytest.approx((0.25 + 0 + 0) / 3), 3)  # ReProver: a crash is a failure
    assert rows["replay_pass@2"] == (pytest.approx((0.5 + 0 + 0) / 3), 3)  # 1 - C(3,2)/C(4,2) = 1/2
    assert rows["proving_errors"] == (1.0, 3) and rows["proving_theorems"] == (3.0, 3)
    repl = ProvingSettings(backend={"kind": "repl"})
    assert {m.metric for m in proving_metrics([_record("r", "test", 1, 1)], repl)} >= {"repl_pass@1"}


def test_proofs_are_recorded_once_per_run_and_read_back(store):
    records = [
        _record(store.repo_ids()[0], "train", 1, 1, proof=["unfold double", "omega"]),
        _record("r", "test", 1, 0),
    ]
    rows = proof_rows(records, "run-1", "ckpt-1", "evaluation")
    assert record_proofs(store, rows) == 1 and record_proofs(store, rows) == 1  # INSERT OR REPLACE: no duplicate
    (found,) = read_proofs(store, "run-1")
    assert found["tactics"] == ["unfold double", "omega"] and found["proof"] == "unfold double\nomega"
    assert found["checker"] == "replay" and found["purpose"] == "evaluation" and found["axioms"] == []
    assert read_proofs(store, "another-run") == []


def test_a_multiline_proof_replaces_the_tactic_block_indented():
    proof = next(p for p in KNOWN_PROOFS if p.full_name == "NatBasics.sumTo_formula")
    text = "namespace X\n\ntheorem sumTo_formula (n : Nat) : 2 * sumTo n = n * (n + 1) := by sorry\n\nend X\n"
    out = replace_proof(text, (3, 1), (3, 72), proof.tactics)
    assert "sorry" not in out and out.endswith("\n\nend X\n")
    assert (
        "theorem sumTo_formula (n : Nat) : 2 * sumTo n = n * (n + 1) := by\n  induction n with\n    | zero => rfl"
        in out
    )


def test_config_refuses_k_above_the_attempts_and_repeated_beam_searches():
    with pytest.raises(ValueError, match="k=4 needs at least 4 attempts"):
        ProvingSettings(k=4, attempts=2, generator={"decoding": "sample"})
    with pytest.raises(ValueError, match="beam decoding would repeat one search"):
        ProvingSettings(attempts=2, k=2)
    assert ProvingSettings(mode="whole_proof", num_tactics=8, k=8).samples_per_theorem == 8


def test_retrieval_puts_the_best_accessible_premises_before_the_state(store, tmp_path):
    from tasks.generate.retrieval import RetrievalGenerator
    from tasks.lean import load_theorems
    from tasks.models.loading import resolve_model
    from tasks.retriever.data import PremiseCorpus

    class Recorder:
        name = "recorder"
        seen: list = []

        def generate(self, queries, k):
            self.seen.extend(q.goals for q in queries)
            return [[] for _ in queries]

    repo = next(r["repo_id"] for r in store.repositories() if r["name"] == "NatBasics")
    corpus = PremiseCorpus(store.read_table("premises", [repo]), store.read_table("files", [repo]))
    encoder = resolve_model("builtin:tiny-encoder", tmp_path / "models")
    inner = Recorder()
    gen = RetrievalGenerator.load(inner, encoder, corpus, num_premises=3)
    theorem = next(t for t in load_theorems(store, [repo]) if t.full_name == "NatBasics.double_add")
    gen.generate([TacticQuery("n m : Nat\n⊢ double (n + m) = double n + double m", theorem)], 2)
    (prompt,) = inner.seen
    premises, _, state = prompt.rpartition("\n\n")
    assert state.startswith("n m : Nat") and len(premises.split("\n")) >= 3
    accessible = set(corpus.accessible(repo, theorem.file_path, theorem.start).tolist())
    chosen = gen.premises_for([TacticQuery("⊢ x", theorem)])[0]
    assert all(corpus.texts.index(p) in accessible for p in chosen)
