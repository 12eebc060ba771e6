"""Whole-proof examples: (header + statement -> whole proof) in TRL's prompt-completion format.

A proof row (storage/proof_snapshot.py `PROOF_ROWS`: kind, key, header, statement, informal, proof,
origin) becomes one example. The user prompt is

    <header>                     (imports, opens; when `include_header` and the row has one)

    /-- <informal statement> -/  (when `include_informal` and the row has one)
    <statement> := by

and the completion is the tactic block. With a tokenizer that has a chat template the example is
conversational (system prompt, user prompt; assistant proof), so the model's own template frames it,
and with `completion_only_loss` the loss falls on the proof (and its end-of-turn token) only.
Without one it is plain text: prompt `<user prompt>\\n`, completion the proof lines indented by two
spaces (TRL appends the end-of-sequence token). The same prompt is what generation asks
(tasks/sft_proof/generate.py), so training and sampling agree.

Rows are kept once per (statement, proof with whitespace collapsed); proofs with `sorry`/`admit`,
empty ones and those over `max_proof_chars` are skipped and counted.

    python -m tasks.sft_proof.data
"""

from __future__ import annotations

from dataclasses import dataclass

from storage.tactic_text import is_sorry


def statement_head(statement: str) -> str:
    """The statement without a trailing `:=` / `:= by` (the format, not a body)."""
    head = statement.strip()
    for tail in (":= by", ":="):
        if head.endswith(tail):
            return head[: -len(tail)].rstrip()
    return head


def user_prompt(statement: str, header: str = "", informal: str | None = None) -> str:
    """The prompt text: header, informal statement as a doc comment, statement ending in `:= by`."""
    parts = []
    if header and header.strip():
        parts.append(header.strip() + "\n")
    if informal and informal.strip():
        parts.append(f"/-- {informal.strip()} -/")
    parts.append(statement_head(statement) + " := by")
    return "\n".join(parts)


def row_prompt(row: dict, include_header: bool, include_informal: bool) -> str:
    return user_prompt(
        row["statement"],
        row.get("header") or "" if include_header else "",
        row.get("informal") if include_informal else None,
    )


def plain_prompt(user: str) -> str:
    """The prompt of a model without a chat template (the proof follows on the next line)."""
    return user + "\n"


def plain_completion(proof: str) -> str:
    return "\n".join("  " + line if line.strip() else "" for line in proof.strip("\n").splitlines())


def has_chat_template(tokenizer) -> bool:
    return bool(getattr(tokenizer, "chat_template", None))


@dataclass(frozen=True)
class ProofExamples:
    prompts: list
    completions: list
    rows: list[dict]
    skipped: dict[str, int]

    def __len__(self) -> int:
        return len(self.prompts)

    def to_dataset(self):
        import datasets

        return datasets.Dataset.from_dict({"prompt": self.prompts, "completion": self.completions})


def build_examples(rows: list[dict], settings, tokenizer=None) -> ProofExamples:
    """Examples of `rows` (see the module doc), in row order, once per (statement, proof)."""
    chat = tokenizer is None or has_chat_template(tokenizer)
    prompts, completions, kept, seen = [], [], [], set()
    skipped = {"sorry": 0, "empty": 0, "too_long": 0, "duplicate": 0}
    for r in rows:
        proof = (r.get("proof") or "").strip("\n").rstrip()
        if not proof.strip():
            skipped["empty"] += 1
            continue
        if is_sorry(proof):
            skipped["sorry"] += 1
            continue
        if len(proof) > settings.max_proof_chars:
            skipped["too_long"] += 1
            continue
        key = (" ".join(statement_head(r["statement"]).split()), " ".join(proof.split()))
        if key in seen:
            skipped["duplicate"] += 1
            continue
        seen.add(key)
        user = row_prompt(r, settings.include_header, settings.include_informal)
        if chat:
            prompts.append([{"role": "system", "content": settings.system_prompt}, {"role": "user", "content": user}])
            completions.append([{"role": "assistant", "content": proof}])
        else:
            prompts.append(plain_prompt(user))
            completions.append(plain_completion(proof))
        kept.append(r)
    return ProofExamples(prompts, completions, kept, skipped)


if __name__ == "__main__":
    from .config import SFTProofSettings

    demo = [
        {
            "statement": "theorem t (n : Nat) : n + 0 = n :=",
            "header": "import Mathlib",
            "informal": "Adding zero changes nothing.",
            "proof": "simp",
        }
    ]
    ex = build_examples(demo, SFTProofSettings())
    print(ex.prompts[0], ex.completions[0], sep="\n")
