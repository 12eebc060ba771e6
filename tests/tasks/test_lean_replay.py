"""The replay backend on the sample's traced proofs: exact, offline, labelled `replay`.

PYTHONPATH=$PWD HF_HUB_OFFLINE=1 .venv/bin/python -m pytest tests/tasks/test_lean_replay.py -q
"""

from __future__ import annotations

import pytest

from storage.errors import InputError
from tasks.lean import BackendSettings, judge, load_theorems, open_backend, theorem_spec
from tests.doubles.sample_store import store, theorems, traced_proofs  # noqa: F401  (fixtures)


@pytest.fixture(scope="module")
def replay(store):
    backend = open_backend(BackendSettings(kind="replay"), store)
    yield backend
    backend.close()


def repo_id(store, name: str) -> str:
    return next(r["repo_id"] for r in store.repositories() if r["name"] == name)


def test_replay_accepts_every_traced_proof_of_the_sample_step_by_step_and_whole(store, replay):
    proofs = traced_proofs(store)
    specs = {(t.repo_id, t.file_path, t.full_name): t for t in load_theorems(store, tactic_proofs_only=True)}
    checked = 0
    for key, tactics in proofs.items():
        theorem = specs[key]
        result = replay.start(theorem)
        assert result.status == "state", key
        for i, tac in enumerate(tactics):
            result = replay.run_tactic(theorem, result.state, tac)
            assert result.status == ("finished" if i == len(tactics) - 1 else "state"), (key, tac, result)
        check = replay.check_proof(theorem, "\n".join(tactics))
        assert check.accepted and check.checker == "replay", (key, check)
        assert judge(check, "\n".join(tactics)).proved
        checked += 1
    assert checked > 150


def test_replay_rejects_untraced_tactics_states_and_incomplete_proofs(store, replay):
    specs = [t for t in load_theorems(store, tactic_proofs_only=True) if t.full_name.endswith("one_mul'")]
    theorem = specs[0]
    s0 = replay.start(theorem)
    assert s0.state.goals == "n : Nat\n⊢ 1 * n = n"
    assert replay.run_tactic(theorem, s0.state, "  simp ").status == "finished"  # whitespace is normalised
    wrong = replay.run_tactic(theorem, s0.state, "omega")
    assert wrong.status == "error" and "not traced" in wrong.message
    assert not replay.check_proof(theorem, "omega").accepted
    assert not replay.check_proof(theorem, "simp\nsimp").accepted  # nothing follows a finished proof


def test_replay_never_finishes_through_sorry(store, replay):
    theorem = next(t for t in load_theorems(store, sorry_only=True) if t.full_name == "NatBasics.sumTo_formula")
    s0 = replay.start(theorem)
    assert s0.status == "state"
    assert replay.run_tactic(theorem, s0.state, "sorry").status == "error"
    check = replay.check_proof(theorem, "sorry")
    verdict = judge(check, "sorry")
    assert not verdict.proved and "sorry" in verdict.reason


def test_theorem_not_in_the_store_is_an_input_error_naming_it(store):
    with pytest.raises(InputError, match="NatBasics.no_such_theorem"):
        theorem_spec(store, repo_id(store, "NatBasics"), "NatBasics.no_such_theorem")


def test_statement_missing_from_the_export_is_read_from_the_corpus(store):
    theorem = theorem_spec(
        store, repo_id(store, "NatBasics"), "NatBasics.sumTo_formula"
    )  # its theorem_statement is null
    assert theorem.statement == "theorem sumTo_formula (n : Nat) : 2 * sumTo n = n * (n + 1)"


def test_known_proofs_are_kept_out_of_the_traced_data(store, theorems, replay):
    """The sample's known proofs prove `sorry` theorems; replay (the traced data) must not know them."""
    from storage.sample.content.known_proofs import KNOWN_PROOFS

    sorry_names = {t.full_name for t in load_theorems(store, sorry_only=True)}
    for kp in KNOWN_PROOFS:
        theorem = theorems[kp.full_name]
        assert kp.full_name in sorry_names
        assert kp.steps[-1][1] == "no goals"
        assert not replay.check_proof(theorem, kp.proof).accepted
        first = replay.start(theorem)  # the known proof starts where the traced theorem does
        assert first.status == "state"


def test_check_proofs_keeps_input_order(store, theorems, replay):
    from tasks.lean import check_proofs

    one_mul = theorems["NatBasics.one_mul'"]
    checks = check_proofs(replay, [(one_mul, "omega"), (one_mul, "simp")])
    assert [c.accepted for c in checks] == [False, True]


def test_replay_without_a_store_is_an_input_error():
    with pytest.raises(InputError, match="replay"):
        open_backend(BackendSettings(kind="replay"), None)
