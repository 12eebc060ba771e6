"""Lean in the loop: one backend interface (`backend.py`), four backends (`repl`,
`kimina`, `leandojo`, `replay`), the text pre-filter (`guard.py`), the one verdict rule (`verdict.py`) and the
process sandbox (`sandbox.py`). See docs/lean-backends.md.

    from tasks.lean import BackendSettings, open_backend
    backend = open_backend(BackendSettings(kind="replay"), store)
"""

from __future__ import annotations

from .backend import LeanBackend, ProofCheck, ProofState, TacticResult, TheoremSpec
from .config import BackendSettings
from .guard import DEFAULT_ALLOWED_AXIOMS, forbidden_construct
from .theorems import load_theorems, theorem_spec
from .verdict import RULE_VERSION, Verdict, judge

__all__ = [
    "BackendSettings",
    "DEFAULT_ALLOWED_AXIOMS",
    "LeanBackend",
    "RULE_VERSION",
    "ProofCheck",
    "ProofState",
    "TacticResult",
    "TheoremSpec",
    "Verdict",
    "check_proofs",
    "forbidden_construct",
    "judge",
    "load_theorems",
    "open_backend",
    "preflight",
    "theorem_spec",
]


def check_proofs(backend: LeanBackend, items: list[tuple[TheoremSpec, str]]) -> list[ProofCheck]:
    """Check several (theorem, proof) pairs: in batches where the backend has them (kimina),
    else one by one. Results are in input order."""
    batch = getattr(backend, "check_proofs", None)
    if batch is not None:
        return batch(items)
    return [backend.check_proof(theorem, proof) for theorem, proof in items]


def preflight(settings: BackendSettings, theorems: list[TheoremSpec] | None = None) -> None:
    """Fail now, with the install command or the fix, if the backend cannot run (its package,
    `lake`, or its server is missing) or, given the theorems to work on, if a repository has no
    usable checkout or uses a Lean version the backend does not support (tasks/lean/versions.py).
    Starts no Lean process; `open_backend` calls it (without theorems)."""
    from .availability import check_available, check_checkouts, check_versions

    check_available(settings)
    if theorems:
        check_checkouts(settings, theorems)
        check_versions(settings, theorems)


def open_backend(settings: BackendSettings, store) -> LeanBackend:
    """The backend `settings` names (tasks/lean/registry.py), checked to be usable before any work starts."""
    from .registry import get

    preflight(settings)
    backend = get(settings.kind).open(settings, store)
    if getattr(settings, "recheck", None) is None:
        return backend
    from .recheck import RecheckedBackend

    try:
        checker = open_backend(settings.model_copy(update={"kind": settings.recheck, "recheck": None}), store)
    except BaseException:
        backend.close()
        raise
    return RecheckedBackend(backend, checker)
