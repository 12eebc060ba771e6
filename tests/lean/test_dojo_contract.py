"""The `leandojo` backend held to the backend contract (issue 14): lean-dojo's real `Dojo`
class above the one double of the Lean process (tests/doubles/dojo_lean/, answering from
tests/doubles/lean_process/). Written in the contract suite's shape, for the lead to fold into
tests/lean/test_backend_contract.py: the same theorems and proofs give the verdicts Lean would
give, and the faults injected through the double (a tactic that answers after the timeout, a
crash mid-proof, garbage) end as a correct verdict after a retry, or as an error; never as a
wrong "proved" or "rejected".

    PYTHONPATH=$PWD .venv/bin/python -m pytest tests/lean/test_dojo_contract.py -q
"""

from __future__ import annotations

import os

import pytest

from tasks.lean import BackendSettings, judge, open_backend
from tests.doubles.dojo_lean import make_dojo_lean
from tests.doubles.sample_store import store, theorems  # noqa: F401  (fixtures)

pytest.importorskip("lean_dojo", reason="lean-dojo 4.20.0 (the dev extra) drives these tests")

SQUARE_ADD = "unfold square\nsimp only [Nat.add_mul, Nat.mul_add, Nat.two_mul, Nat.mul_comm b a]\nomega"

# (theorem, proof, verdict): "unverified" (finished), "not proved" (Lean rejects it, or the guard does), "error"
CASES = [
    ("NatBasics.square_add", SQUARE_ADD, "unverified"),  # a multi-tactic proof, one tactic per request
    ("NatBasics.square_add", "unfold square", "not proved"),  # goals left
    ("NatBasics.square_add", "unfold square\nsorry", "not proved"),  # gives up
    ("NatBasics.square_add", "rfl", "not proved"),  # Lean's error
    ("NatBasics.square_add", SQUARE_ADD + "\nrfl", "not proved"),  # a tactic after the proof finished
]


def verdict(check, proof: str) -> str:
    """ "unverified" where Lean finished the proof: the Dojo reports no axioms and checks no
    statement, so the verdict rule (tasks/lean/verdict.py) never calls its proofs "proved"."""
    if check.error is not None:
        return "error"
    return {"proved": "proved", "unverified": "unverified"}.get(judge(check, proof).status, "not proved")


@pytest.fixture(scope="module")
def _shared_dojo(store, tmp_path_factory):
    folder = tmp_path_factory.mktemp("dojo-contract")
    with pytest.MonkeyPatch.context() as mp:
        double = make_dojo_lean(folder / "dojo", repos=("NatBasics",))
        mp.setenv("PATH", f"{double.bin_dir}{os.pathsep}{os.environ['PATH']}")
        backend = open_backend(
            BackendSettings(
                kind="leandojo",
                tactic_timeout_s=1,  # only a faulted answer is late (each late one waits it out), as in the contract suite
                work_dir=str(folder / "work"),
                leandojo={"cache_dir": str(double.cache_dir)},
                sandbox=double.sandbox(),  # the worker and the double run under bubblewrap
            ),
            store,
        )
        try:
            yield backend, double
        finally:
            backend.close()


@pytest.fixture
def dojo(_shared_dojo):
    """(backend, double): one leandojo backend (one Dojo worker: lean-dojo's import, ~1.5 s of
    CPU, paid once) and its double for the module's tests, which set the same settings and count
    no starts; the faults are cleared before and after each test."""
    backend, double = _shared_dojo
    double.faults()
    yield backend, double
    double.faults()


def test_verdicts(dojo, theorems):
    backend, _ = dojo
    got = [verdict(backend.check_proof(theorems[name], proof), proof) for name, proof, _ in CASES]
    assert got == [v for _, _, v in CASES]


def test_fault_tactic_answering_after_the_timeout(dojo, theorems):
    backend, double = dojo
    theorem = theorems["NatBasics.square_add"]
    double.faults({"when": '"cmd": "omega"', "do": "late", "seconds": 60, "times": 1})
    # late once: the hang is retried on a fresh Dojo (its tactics replayed), where it answers in time
    assert verdict(backend.check_proof(theorem, SQUARE_ADD), SQUARE_ADD) == "unverified"
    double.faults({"when": '"cmd": "omega"', "do": "late", "seconds": 60, "times": 2})
    assert verdict(backend.check_proof(theorem, SQUARE_ADD), SQUARE_ADD) == "error"  # late twice: not a verdict
    assert verdict(backend.check_proof(theorem, "rfl"), "rfl") == "not proved"  # the late answer is never read
    assert verdict(backend.check_proof(theorem, SQUARE_ADD), SQUARE_ADD) == "unverified"


def test_fault_crash_mid_proof_is_retried_on_a_fresh_process(dojo, theorems):
    backend, double = dojo
    theorem = theorems["NatBasics.square_add"]
    double.faults({"when": "simp only", "do": "crash", "times": 1})
    assert verdict(backend.check_proof(theorem, SQUARE_ADD), SQUARE_ADD) == "unverified"
    double.faults({"when": "simp only", "do": "crash"})  # every time: the retry crashes too
    check = backend.check_proof(theorem, SQUARE_ADD)
    assert verdict(check, SQUARE_ADD) == "error" and "crashed" in check.error


def test_fault_garbage_answer_is_an_error(dojo, theorems):
    backend, double = dojo
    theorem = theorems["NatBasics.square_add"]
    double.faults({"when": "unfold square", "do": "garbage"})
    check = backend.check_proof(theorem, SQUARE_ADD)
    assert verdict(check, SQUARE_ADD) == "error" and "Invalid JSON" in check.error
