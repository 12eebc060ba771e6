"""Sampling whole proofs from a whole-proof checkpoint, in the prompt it was trained on.

`generate_proofs(model, tokenizer, prompts, n, ...)`: for each user prompt (tasks/sft_proof/data.py
`user_prompt`), up to `n` distinct proofs with their log-probabilities, best first. A chat model is
asked through its chat template (tasks/sft/generate.py's batched generation, whole text kept); a
model without one gets the plain prompt and its completion is dedented back into a tactic block.
`proof_prompt_of(theorem)` is the user prompt of a TheoremSpec (a statement-set theorem may carry
`header` and `informal`; a repository theorem has its statement only). `proof_writer(trained)` is the
trainer's `proof_writer` (tasks/trainers/base.py): how tasks/generate/checkpoint.py asks its checkpoints.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass

from .data import has_chat_template, plain_prompt, user_prompt


def proof_prompt_of(theorem, include_header: bool = True, include_informal: bool = True) -> str:
    return user_prompt(
        getattr(theorem, "statement", "") or "",
        (getattr(theorem, "header", "") or "") if include_header else "",
        getattr(theorem, "informal", None) if include_informal else None,
    )


@dataclass(frozen=True)
class WholeProofWriter:
    """A whole-proof checkpoint asked in its training prompt (tasks/generate/base.py `ProofWriter`)."""

    system_prompt: str
    include_header: bool
    include_informal: bool

    def prompt(self, theorem) -> str:
        return proof_prompt_of(theorem, self.include_header, self.include_informal)

    def generate(self, model, tokenizer, prompts: Sequence[str], n: int, **kwargs) -> list[list[tuple[str, float]]]:
        return generate_proofs(model, tokenizer, prompts, n, **kwargs)


def proof_writer(trained: dict) -> WholeProofWriter:
    """The writer of a checkpoint whose manifest (or model card) records the settings `trained`: the
    prompt settings it trained with, the defaults where it records none."""
    from .config import SFTProofSettings

    keys = ("system_prompt", "include_header", "include_informal")
    settings = SFTProofSettings.model_validate({k: trained[k] for k in keys if k in trained})
    return WholeProofWriter(settings.system_prompt, settings.include_header, settings.include_informal)


def _strip_by(text: str) -> str:
    body = text.strip("\n")
    if body.lstrip().startswith(":= by"):
        body = body.lstrip()[5:]
    return textwrap.dedent(body.strip("\n")).strip()


def generate_proofs(
    model,
    tokenizer,
    prompts: Sequence[str],
    n: int,
    *,
    system_prompt: str,
    max_new_tokens: int,
    decoding: str = "sample",
    temperature: float = 1.0,
    tokens: list | None = None,
) -> list[list[tuple[str, float]]]:
    if not prompts:
        return []
    if has_chat_template(tokenizer):
        from tasks.sft.generate import generate_tactics_batch

        out = generate_tactics_batch(
            model, tokenizer, list(prompts), n, system_prompt=system_prompt, max_new_tokens=max_new_tokens,
            decoding=decoding, temperature=temperature, max_state_tokens=None, whole_text=True, tokens=tokens,
        )  # fmt: skip
        return [[(_strip_by(t), lp) for t, lp in c if _strip_by(t)] for c in out]
    from tasks.sft.generate import distinct_best, eos_ids, generate_scored, generation_kwargs, left_padded

    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    eos = eos_ids(model, tokenizer)
    ids = [tokenizer(plain_prompt(p), add_special_tokens=True).input_ids for p in prompts]
    input_ids, attention = left_padded(ids, pad_id)
    kwargs = generation_kwargs(decoding, n, max_new_tokens, temperature, pad_id, eos)
    gen, mask, logprobs = generate_scored(model, input_ids.to(model.device), attention.to(model.device), eos, n, kwargs)
    if tokens is not None:
        tokens[0] += int(mask.sum())
    out = []
    for i in range(len(prompts)):
        texts = distinct_best(tokenizer, gen, mask, logprobs, range(i * n, (i + 1) * n), True)
        out.append([(_unindent(t), lp) for t, lp in texts if _unindent(t)])
    return out


def _unindent(text: str) -> str:
    """A plain completion's lines, less the two spaces `plain_completion` put before each."""
    return "\n".join(line[2:] if line.startswith("  ") else line for line in text.splitlines()).strip()
