"""Proof search: best-first over tactic states (ReProver) and whole-proof sampling, and pass@k.

    from tasks.search import SearchBudget, best_first_search, whole_proof_search, pass_at_k

See docs/proving.md for the algorithms and what each result field means.
"""

from .best_first import best_first_search, best_first_search_many
from .pass_at_k import pass_at_k, pass_at_k_mean
from .result import SearchBudget, SearchResult
from .whole_proof import whole_proof_search

__all__ = [
    "SearchBudget",
    "SearchResult",
    "best_first_search",
    "best_first_search_many",
    "pass_at_k",
    "pass_at_k_mean",
    "whole_proof_search",
]
