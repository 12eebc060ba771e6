"""The records of a LeanDojo export as Dojoflow reads them, and a theorem's identity.

docs/leandojo-export.md, "Import: where the time goes": a split file is decoded by
msgspec straight into the typed records below, which checks every type, every key
(none missing, none unknown) and every position's range in C.
"""

from __future__ import annotations

from typing import Annotated, NamedTuple

import msgspec

THEOREM_KEYS = {"url", "commit", "file_path", "full_name", "theorem_statement", "start", "end", "traced_tactics"}
TACTIC_KEYS = {"tactic", "annotated_tactic", "state_before", "state_after"}
PREMISE_KEYS = {"full_name", "code", "start", "end", "kind"}
LISTED = "dojoflow_listed"  # in a repository's stored metadata: its entry of a Dojoflow export's `repositories`
ABSENT = "_absent_keys"  # in `extra`: keys that the source record did not have at all
MAX_POS = 2**63 - 1  # positions are stored as 64-bit integers


class TheoremKey(NamedTuple):
    """A theorem's identity in an export: its repository (url, commit), file and name.
    Two records with the same key are the same theorem."""

    url: str
    commit: str
    file_path: str
    full_name: str

    @property
    def repo(self) -> tuple[str, str]:
        """(url, commit): the repository that holds the theorem."""
        return self.url, self.commit


_Coordinate = Annotated[int, msgspec.Meta(ge=0, le=MAX_POS)]
_Position = tuple[_Coordinate, _Coordinate]
# gc=False: these records hold only strings, numbers and lists of records, never a cycle,
# so the cycle collector need not track them (it took a fifth of the decoding time).


class Annotation(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """A premise a tactic mentions, where it is defined."""

    full_name: str
    def_path: str
    def_pos: _Position | None
    def_end_pos: _Position | None


class Tactic(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """One traced tactic: its text, its annotated text and premises, the states around it."""

    tactic: str
    annotated_tactic: tuple[str, list[Annotation]]
    state_before: str
    state_after: str


class Theorem(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """One theorem record of a split file, exactly LeanDojo's keys."""

    url: str
    commit: str
    file_path: str
    full_name: str
    theorem_statement: str | None
    start: _Position
    end: _Position
    traced_tactics: list[Tactic]

    def key(self) -> TheoremKey:
        return TheoremKey(self.url, self.commit, self.file_path, self.full_name)


class Identity(msgspec.Struct, gc=False):
    """A theorem record's identity, and the fields another split kind must agree on
    (`same_as`); its tactics are skipped (but still checked as JSON)."""

    url: str
    commit: str
    file_path: str
    full_name: str
    theorem_statement: str | None = None
    start: _Position | None = None
    end: _Position | None = None

    def same_as(self, thm: Theorem) -> bool:
        """True when `thm` (the record read from the first split kind) agrees on the statement
        and positions (a checked record holds its positions as lists, a decoded one as tuples)."""
        return (
            self.theorem_statement == thm.theorem_statement
            and list(self.start or ()) == list(thm.start)
            and list(self.end or ()) == list(thm.end)
        )

    def key(self) -> TheoremKey:
        return TheoremKey(self.url, self.commit, self.file_path, self.full_name)


THEOREMS_DECODER = msgspec.json.Decoder(list[Theorem])
IDENTITIES_DECODER = msgspec.json.Decoder(list[Identity])
# What msgspec raises on bad input (ValidationError is a DecodeError; strings that are not
# UTF-8 raise UnicodeDecodeError; deep nesting RecursionError).
DECODE_ERRORS = (msgspec.DecodeError, UnicodeDecodeError, RecursionError)


def convert(rec, kind):
    """`rec` (parsed JSON) as the typed record `kind`, or None when it does not fit."""
    try:
        return msgspec.convert(rec, kind)
    except DECODE_ERRORS:
        return None
