"""The formats users bring, as column mappings (docs/statement-sets.md cites each one's source).

A preset maps Dojoflow's fields (name, statement, header, split, informal, proof, source,
lean_version) to a format's columns and says what its statements must end in. A file whose columns
are exactly one preset's (`columns`, plus any of `optional`) is read with it without naming it.

- `deepseek`: DeepSeek-Prover's miniF2F/ProofNet JSONL (deepseek-ai/DeepSeek-Prover-V1.5
  datasets/minif2f.jsonl, datasets/proofnet.jsonl): name, split (valid/test), informal_prefix,
  formal_statement (ends `:= by` and a newline, or `:=`: the format, not a body), goal, header.
- `lean_grpo`: lean-grpo theorem files (tasks/grpo/theorem_files.py): name, statement, and
  optional context (Lean text the statement needs) and imports (module names).
- `putnambench`: PutnamBench's Lean 4 files (trishullab/PutnamBench lean4/src/*.lean): one theorem
  per file named after it, `sorry` proof, a `_solution` abbrev before it where the problem asks for
  an answer; the folder's lean-toolchain and lake-manifest.json give Lean and Mathlib versions
  (read by reader.py, not by columns).
- `putnam_jsonl`: PutnamBench as the provers' evaluation scripts read it (Goedel-LM/Goedel-Prover
  datasets/putnam.jsonl): header (the imports and the docstring), name, formal_statement (ends
  `:= by` and a newline), informal_statement, informal_solution, tags, coq_statement,
  isabelle_statement.
- `numina`: NuminaMath-LEAN (AI-MO/NuminaMath-LEAN dataset card): uuid, problem, question_type,
  answer, author, formal_statement (imports and the theorem, `:= by sorry`), formal_ground_truth (a
  human proof, complete when ground_truth_type is `complete`), ground_truth_type, formal_proof,
  rl_data, source, problem_type, exam.
- `goedel`: Goedel-Prover's proof tables (Goedel-LM/Lean-workbook-proofs dataset card):
  problem_id, full_proof (the header, the theorem and its proof in one text); the statement is the
  proof's declaration up to its `:=`, the proof is claimed.
- `table`: a plain statement table: statement, and optional name, header, split, informal, proof,
  source, lean_version (the Goedel-Pset / Lean Workbook style of one statement per row).
"""

from __future__ import annotations

from dataclasses import dataclass, field

FIELDS = ("name", "statement", "header", "split", "informal", "proof", "source", "lean_version")


@dataclass(frozen=True)
class Preset:
    name: str
    columns: dict[str, str]  # Dojoflow field -> the format's column (required)
    optional: dict[str, str] = field(default_factory=dict)  # fields the format may carry
    needs_assign: bool = False
    needs_sorry: bool = False
    proof_when: tuple[str, str] | None = None  # (column, value): the proof column counts only then
    doc: str = ""

    def all_columns(self) -> set[str]:
        return set(self.columns.values()) | set(self.optional.values())


PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        Preset(
            "deepseek",
            {
                "name": "name",
                "split": "split",
                "informal": "informal_prefix",
                "statement": "formal_statement",
                "header": "header",
            },
            optional={"goal": "goal"},
            needs_assign=True,
            doc="DeepSeek-Prover miniF2F/ProofNet JSONL",
        ),
        Preset(
            "lean_grpo",
            {"name": "name", "statement": "statement"},
            optional={"context": "context", "imports": "imports"},
            doc="lean-grpo theorem file",
        ),
        Preset("putnambench", {}, needs_sorry=True, doc="PutnamBench Lean 4 files (a folder of .lean files)"),
        Preset(
            "putnam_jsonl",
            {"name": "name", "header": "header", "statement": "formal_statement", "informal": "informal_statement"},
            optional={c: c for c in ("informal_solution", "tags", "coq_statement", "isabelle_statement")},
            needs_assign=True,
            doc="PutnamBench as JSONL (Goedel-Prover datasets/putnam.jsonl)",
        ),
        Preset(
            "numina",
            {
                "name": "uuid",
                "informal": "problem",
                "statement": "formal_statement",
                "proof": "formal_ground_truth",
                "source": "source",
            },
            optional={
                c: c
                for c in (
                    "question_type",
                    "answer",
                    "author",
                    "ground_truth_type",
                    "formal_proof",
                    "rl_data",
                    "problem_type",
                    "exam",
                )
            },
            proof_when=("ground_truth_type", "complete"),
            doc="NuminaMath-LEAN",
        ),
        Preset(
            "goedel",
            {"name": "problem_id", "statement": "full_proof", "proof": "full_proof"},
            doc="Goedel-Prover proof table (Lean-workbook-proofs)",
        ),
        Preset(
            "table",
            {"statement": "statement"},
            optional={f: f for f in FIELDS if f != "statement"},
            doc="a statement table",
        ),
    )
}


def detect(columns: list[str]) -> Preset | None:
    """The preset whose columns these are exactly (required ones all there, nothing unknown); the one
    requiring most columns when several fit."""
    have = set(columns)
    found = [p for p in PRESETS.values() if p.columns and set(p.columns.values()) <= have and have <= p.all_columns()]
    found.sort(key=lambda p: -len(p.columns))  # stable: {name, statement} is lean_grpo before table
    return found[0] if found else None
