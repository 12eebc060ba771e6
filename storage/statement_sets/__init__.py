"""Statement sets as sources of the store (docs/statement-sets.md): formal statements (with an
optional header, informal text and claimed proof) read from a file or a hub dataset, stored as
`(name, content hash)`, each statement identified by its fingerprint and header.

The read API for training and evaluation (storage/statement_sets/proofs.py has the row shapes):

    from storage.statement_sets import statements, training_statements, verified_proofs
    statements(store, sets=None, split=None)        every statement, with its set's settings
    training_statements(store, sets=None)           train statements, no benchmark or held-out one
    verified_proofs(store, sets=None, split="train")  proofs a verdict accepted, with header and statement
    record_verified_proofs(store, rows)             store proofs a verdict accepted
    check_toolchain(store, set_name, lean_version)  refuse a set written for another Lean (InputError)
"""

from .identity import normalise_header, split_of, statement_id
from .proofs import (
    check_toolchain,
    claimed_proofs,
    lean_code,
    record_verified_proofs,
    statements,
    training_statements,
    verified_proofs,
)
from .sets import add_set, list_sets, read_statements, set_meta

__all__ = [
    "add_set",
    "check_toolchain",
    "claimed_proofs",
    "lean_code",
    "list_sets",
    "normalise_header",
    "read_statements",
    "record_verified_proofs",
    "set_meta",
    "split_of",
    "statement_id",
    "statements",
    "training_statements",
    "verified_proofs",
]
