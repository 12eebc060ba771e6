"""Tactic search on the Dojo, finished proofs re-checked by a whole-proof backend.

lean-dojo's `Dojo` runs tactics but answers no `#print axioms` and no statement check,
so under the verdict rule (tasks/lean/verdict.py) its finished proofs are `unverified`.
With `backend.recheck: repl | kimina`, `open_backend` pairs it with that backend: states
and tactics go to the Dojo, whole proofs to the re-checker, whose answers decide. The
pair is named after the re-checker (its name is on every verdict and pass@k metric).

    BackendSettings(kind="leandojo", recheck="repl")
"""

from __future__ import annotations

from .backend import LeanBackend, ProofCheck, ProofState, TacticResult, TheoremSpec


class RecheckedBackend:
    def __init__(self, tactics: LeanBackend, proofs: LeanBackend):
        self.tactics = tactics
        self.proofs = proofs
        self.name = proofs.name

    def start(self, theorem: TheoremSpec) -> TacticResult:
        return self.tactics.start(theorem)

    def run_tactic(self, theorem: TheoremSpec, state: ProofState, tactic: str) -> TacticResult:
        return self.tactics.run_tactic(theorem, state, tactic)

    def check_proof(self, theorem: TheoremSpec, proof: str) -> ProofCheck:
        return self.proofs.check_proof(theorem, proof)

    def close(self) -> None:
        try:
            self.tactics.close()
        finally:
            self.proofs.close()
