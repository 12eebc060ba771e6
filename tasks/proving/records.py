"""The records proof search passes between its tasks, typed: the theorems to try, the ones that
cannot be tried (with the reason), and one search's outcome per theorem.

Frozen pydantic models, so a task's result is stored as JSON by Prefect's serializer and read back
as the model (as `GeneratorRef` and `CheckpointRef` are). Their fields are the keys the records had
when they travelled as dicts (`RECORD_VERSION` 4, tasks/proving/evaluate.py), so a dict of that
version (a cached result written before, `tests/tasks/test_search_records.py`) validates into its
model unchanged (`of`), and `model_dump()` gives that dict back.

- `TheoremToTry`: a theorem (or a benchmark's or statement set's statement) one search tries.
- `Untried`: one that cannot be tried, and why (no statement for a Lean backend, ...).
- `Selection`: what a selection gives: the theorems to try and the untried ones; `Pool` adds how
  many of an expert-iteration pool were proved before.
- `SearchRecord`: a theorem and its tactic search's outcome over its attempts (`prove_theorems`).
- `SampleRecord`: a statement and the whole proofs sampled for it (`tasks/expert/whole_proof.py`).

    python -c "help('tasks.proving.records')"
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, Field

from storage.ids import theorem_id
from tasks.lean.backend import TheoremSpec

R = TypeVar("R", bound="_Record")


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    @classmethod
    def of(cls: type[R], value: R | dict) -> R:
        """`value` as this model: itself, or a record dict (as written before the models: version 4)."""
        return value if isinstance(value, cls) else cls.model_validate(value)

    @classmethod
    def all(cls: type[R], values: Iterable[R | dict]) -> list[R]:
        return [cls.of(v) for v in values]

    def but(self: R, **changes) -> R:
        """A copy with `changes`, validated (a frozen record is never changed in place)."""
        return type(self).model_validate({**self.model_dump(), **changes})


class TheoremToTry(_Record):
    """A theorem one search tries: where it is, its statement, and the traced goals before its first tactic."""

    repo_id: str = Field(description="Its repository; `benchmark:<name>` or `statements:<set>` for such a statement.")
    theorem_id: str = Field(description="storage.ids.theorem_id of (repo_id, file_path, full_name); a statement's id.")
    file_path: str = Field("", description="The file inside the repository; empty for a statement without one.")
    full_name: str = Field(description="The declaration's full name.")
    split: str | None = Field(description="Its split (train, val, test, benchmark); None: a `sorry` theorem.")
    url: str = Field("", description="The repository's URL (empty for a statement without one).")
    commit: str = Field("", description="The repository's commit.")
    statement: str = Field("", description="Lean text of the declaration up to `:=` (empty: replay needs none).")
    start: tuple[int, int] | None = Field(None, description="(line, column) of the declaration, when known.")
    goals: str = Field("", description="The traced goals before the first tactic (empty when unknown).")
    benchmark: str | None = Field(None, description="The benchmark's fingerprint, for a benchmark's statement.")
    via: str | None = Field(None, description="`repo_id:full_name` of the store theorem a statement is tried through.")
    spec: TheoremSpec | None = Field(None, description="The spec a statement is tried through (None: its own fields).")
    sorry: bool = Field(False, description="Expert iteration: whether the theorem's traced proof has a `sorry`.")
    toolchain: str | None = Field(None, description="Expert iteration: the Lean version its proofs are stored under.")
    kind: str | None = Field(None, description="Whole-proof pool: `repo` (a repository's theorem) or `statement`.")
    key: str | None = Field(None, description="Whole-proof pool: the theorem id or the statement set's statement id.")
    header: str = Field("", description="Whole-proof pool: the statement set's header (imports, opens).")
    informal: str | None = Field(None, description="Whole-proof pool: the statement set's informal statement.")
    set: str | None = Field(None, description="Whole-proof pool: the statement set a statement comes from.")

    def spec_of(self) -> TheoremSpec:
        """The backend's spec: its own fields, or for a statement the spec it is tried through."""
        if self.spec is not None:
            return self.spec
        return TheoremSpec(self.repo_id, self.url, self.commit, self.file_path, self.full_name, self.statement,
                           self.start)  # fmt: skip


class Untried(_Record):
    """A theorem that cannot be tried, and why."""

    repo_id: str = Field(description="Its repository (or benchmark group).")
    file_path: str = Field("", description="The file inside the repository.")
    full_name: str = Field(description="The declaration's full name.")
    split: str | None = Field(None, description="The split it belongs to.")
    reason: str = Field(description="Why it cannot be tried, in words.")
    theorem_id: str | None = Field(None, description="Its theorem id, once known.")
    benchmark: str | None = Field(None, description="The benchmark's fingerprint, for a benchmark's statement.")

    @classmethod
    def in_store(cls, row: dict[str, str | None]) -> Untried:
        """A store theorem that cannot be tried (a row of `tasks.lean.load_theorems`' `untried`:
        repo_id, file_path, full_name, split, reason), with its theorem id."""
        return cls(**row, theorem_id=theorem_id(row["repo_id"], row["file_path"], row["full_name"]))


class Selection(_Record):
    """The theorems a proving evaluation (or a round) tries, and those it cannot."""

    theorems: tuple[TheoremToTry, ...] = Field((), description="The theorems to try, in search order.")
    untried: tuple[Untried, ...] = Field((), description="Those that cannot be tried, with the reason.")


class Pool(Selection):
    """An expert-iteration round's pool."""

    proved: int = Field(0, description="Theorems of the pool left out because they hold a proof found before.")


class SearchRecord(TheoremToTry):
    """A theorem and its search's outcome over `attempts` (tasks/proving/evaluate.py `prove_theorems`)."""

    checker: str = Field(description="The backend that checked (with the verdict level: `repl+kernel_replayed`).")
    generator: str = Field("", description="The tactic generator's name.")
    started: bool = Field(True, description="Some attempt got past the start (ReProver discards the others).")
    n: int = Field(0, description="Attempts made.")
    c: int = Field(0, description="Attempts that found a proof.")
    errors: int = Field(0, description="Attempts that ended in an error.")
    unverified: int = Field(0, description="Finished proofs the backend could not verify, when none is proved.")
    error: str | None = Field(None, description="The first error, in words.")
    expansions: float = Field(0.0, description="Mean expansions per attempt.")
    seconds: float = Field(0.0, description="Mean seconds per attempt.")
    stopped: tuple[str, ...] = Field((), description="Why each attempt stopped.")
    proof: tuple[str, ...] | None = Field(None, description="The tactics of the first proof found; None: none.")
    axioms: tuple[str, ...] = Field((), description="The axioms that proof uses.")
    proof_expansions: int | None = Field(None, description="Expansions of the attempt that found the proof.")
    proof_seconds: float | None = Field(None, description="Seconds of the attempt that found the proof.")
    proof_states: tuple[str, ...] | None = Field(None, description="Best-first: the goals before each tactic.")
    searched_by: str = Field("", description="host:pid of the worker that searched.")
    adapter: str | None = Field(None, description="An endpoint generator's adapter loading, in words.")
    tokens: float | None = Field(None, description="This theorem's share of the batch's generated tokens.")
    gpu_seconds: float | None = Field(None, description="GPU seconds spent on it (None: no GPU).")
    carried_from: str | None = Field(None, description="Expert iteration: the theorem id a proof was carried from.")


class SampleRecord(TheoremToTry):
    """A statement and the whole proofs sampled for it (tasks/expert/whole_proof.py `sample_batch`)."""

    checker: str = Field(description="The backend that checked.")
    generator: str = Field("", description="The generator's name.")
    adapter: str | None = Field(None, description="An endpoint generator's adapter loading, in words.")
    sampled: int = Field(0, description="Proofs sampled.")
    checked: int = Field(0, description="Proofs checked before the time ran out.")
    verified: tuple[str, ...] = Field((), description="The proofs the verdict rule called proved.")
    axioms: dict[str, tuple[str, ...]] = Field({}, description="The axioms each verified proof uses.")
    rejected: int = Field(0, description="Proofs rejected (by the guard or by Lean).")
    errors: int = Field(0, description="Checks that ended in an error.")
    error: str | None = Field(None, description="The first error, in words.")
    seconds: float = Field(0.0, description="Seconds spent checking.")
