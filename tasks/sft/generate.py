"""Tactic generation and scoring with a chat causal LM, shared by evaluation and proof search.

- `generate_tactics(model, tokenizer, state, k)`: up to k distinct tactics for one proof
  state, each with the model's log-probability of it, best first.
- `generate_tactics_batch(...)`: the same for many states at once (left-padded).
- `completion_token_losses(...)`: summed negative log-likelihood and token count of
  given completions, for the evaluation loss.

A tactic's log-probability is the sum of the log-probabilities of its generated
tokens, up to and including the end-of-turn token, under the model with no
temperature or length penalty, so beam search and sampling report comparable numbers
(a best-first prover adds them along a path). Tactics are compared and de-duplicated
by their first line with whitespace collapsed.

    python -c "from tasks.models import load_causal_lm; from tasks.sft.generate import generate_tactics;\
m, t = load_causal_lm('builtin:tiny-causal-lm', '/tmp/models'); print(generate_tactics(m, t, '⊢ True', 4))"
"""

from __future__ import annotations

from collections.abc import Sequence

from .config import DEFAULT_SYSTEM_PROMPT
from .data import first_line, fit_state, normalize_tactic, prompt_messages


def _prompt_ids(tokenizer, state: str, system_prompt: str, max_state_tokens: int | None) -> list[int]:
    state = fit_state(state, tokenizer, max_state_tokens)
    return tokenizer.apply_chat_template(
        prompt_messages(system_prompt, state), add_generation_prompt=True, tokenize=True, return_dict=False
    )


def _common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def eos_ids(model, tokenizer) -> set[int]:
    ids = {tokenizer.eos_token_id}
    gen = getattr(model, "generation_config", None)
    extra = getattr(gen, "eos_token_id", None) if gen is not None else None
    if isinstance(extra, int):
        ids.add(extra)
    elif extra:
        ids.update(extra)
    ids.discard(None)
    return ids


def _sequence_logprobs(model, input_ids, attention_mask, score_mask):
    """Sum over positions where score_mask is 1 of log p(token | prefix), per row."""
    import torch

    position_ids = (attention_mask.cumsum(-1) - 1).clamp(min=0)
    logits = model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids).logits
    logp = torch.log_softmax(logits[:, :-1].float(), dim=-1)
    tok_logp = logp.gather(-1, input_ids[:, 1:].unsqueeze(-1)).squeeze(-1)
    return (tok_logp * score_mask[:, 1:]).sum(-1)


def left_padded(prompts: list[list[int]], pad_id: int):
    """(input ids, attention mask) of `prompts`, left-padded: every prompt ends where generation starts."""
    import torch

    width = max(len(p) for p in prompts)
    input_ids = torch.full((len(prompts), width), pad_id, dtype=torch.long)
    attention = torch.zeros((len(prompts), width), dtype=torch.long)
    for i, p in enumerate(prompts):
        input_ids[i, width - len(p) :] = torch.tensor(p, dtype=torch.long)
        attention[i, width - len(p) :] = 1
    return input_ids, attention


def generation_kwargs(decoding: str, k: int, max_new_tokens: int, temperature: float, pad_id: int, eos) -> dict:
    kwargs = {
        "max_new_tokens": max_new_tokens,
        "num_return_sequences": k,
        "pad_token_id": pad_id,
        "eos_token_id": sorted(eos),
    }
    if decoding == "beam":
        kwargs.update(num_beams=k, do_sample=False, early_stopping=True)
    elif decoding == "sample":
        kwargs.update(do_sample=True, temperature=temperature, num_beams=1)
    else:
        raise ValueError(f"decoding={decoding!r}: expected 'beam' or 'sample'")
    return kwargs


def generate_scored(model, input_ids, attention, eos, k: int, gen_kwargs: dict):
    """(generated tokens [B*k, T], their mask up to and including the first end-of-turn token,
    the log-probability of each generated sequence), in eval mode."""
    import torch

    width = input_ids.shape[1]
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            sequences = model.generate(input_ids=input_ids, attention_mask=attention, **gen_kwargs)
            gen = sequences[:, width:]
            is_eos = torch.zeros_like(gen, dtype=torch.bool)
            for e in eos:
                is_eos |= gen == e
            before_eos = (is_eos.long().cumsum(-1) - is_eos.long()) == 0
            gen_mask = before_eos.long()
            full_attention = torch.cat([attention.repeat_interleave(k, dim=0), gen_mask], dim=1)
            score_mask = torch.cat([torch.zeros_like(attention.repeat_interleave(k, dim=0)), gen_mask], dim=1)
            logprobs = _sequence_logprobs(model, sequences, full_attention, score_mask.float())
    finally:
        if was_training:
            model.train()
    return gen, gen_mask, logprobs


def distinct_best(tokenizer, gen, gen_mask, logprobs, rows: range, whole_text: bool) -> list[tuple[str, float]]:
    """The distinct tactics (or whole texts) of generated `rows`, each at its best log-probability, best first."""
    best: dict[str, tuple[str, float]] = {}
    for j in rows:
        tokens = gen[j][gen_mask[j].bool()].tolist()
        decoded = tokenizer.decode(tokens, skip_special_tokens=True)
        text = decoded.strip() if whole_text else first_line(decoded)
        if not text:
            continue
        key = " ".join(text.split()) if whole_text else normalize_tactic(text)
        lp = float(logprobs[j])
        if key not in best or lp > best[key][1]:
            best[key] = (text, lp)
    return sorted(best.values(), key=lambda t: -t[1])


def generate_tactics_batch(
    model,
    tokenizer,
    states: Sequence[str],
    k: int,
    *,
    system_prompt: str = DEFAULT_SYSTEM_PROMPT,
    max_new_tokens: int = 64,
    decoding: str = "beam",
    temperature: float = 1.0,
    max_state_tokens: int | None = 768,
    whole_text: bool = False,
    tokens: list | None = None,
) -> list[list[tuple[str, float]]]:
    """For each state, up to `k` distinct tactics with their log-probabilities, best first.

    `whole_text` keeps every generated line (a whole proof) instead of the first line only.
    `tokens`, a one-cell list, gains the number of tokens generated (up to and including
    each sequence's end token, padding not counted): the ledger's compute (tasks/ledger.py).
    """
    if not states:
        return []
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    eos = eos_ids(model, tokenizer)
    gen_kwargs = generation_kwargs(decoding, k, max_new_tokens, temperature, pad_id, eos)
    prompts = [_prompt_ids(tokenizer, s, system_prompt, max_state_tokens) for s in states]
    input_ids, attention = left_padded(prompts, pad_id)
    input_ids, attention = input_ids.to(model.device), attention.to(model.device)
    gen, gen_mask, logprobs = generate_scored(model, input_ids, attention, eos, k, gen_kwargs)
    if tokens is not None:
        tokens[0] += int(gen_mask.sum())
    return [
        distinct_best(tokenizer, gen, gen_mask, logprobs, range(i * k, (i + 1) * k), whole_text)
        for i in range(len(states))
    ]


def generate_tactics(model, tokenizer, state: str, k: int, **kwargs) -> list[tuple[str, float]]:
    """Up to `k` distinct tactics for `state` with their log-probabilities, best first.

    Keyword arguments as in `generate_tactics_batch` (system_prompt, max_new_tokens,
    decoding 'beam'|'sample', temperature, max_state_tokens).
    """
    return generate_tactics_batch(model, tokenizer, [state], k, **kwargs)[0]


def completion_token_losses(
    model,
    tokenizer,
    prompts: Sequence[list[dict]],
    completions: Sequence[list[dict]],
    *,
    batch_size: int = 8,
    max_length: int | None = None,
) -> tuple[list[float], list[int]]:
    """Per example: summed NLL of the completion tokens, and how many tokens that is.

    The completion tokens are those of prompt+completion past the tokenized prompt
    (as TRL's completion mask marks them), so this is the training loss's own measure.
    Sequences longer than `max_length` keep their end.
    """
    import torch

    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    encoded = []
    for prompt, completion in zip(prompts, completions):
        p = tokenizer.apply_chat_template(prompt, add_generation_prompt=True, tokenize=True, return_dict=False)
        pc = tokenizer.apply_chat_template(prompt + completion, tokenize=True, return_dict=False)
        start = _common_prefix(p, pc)
        mask = [0] * start + [1] * (len(pc) - start)
        if max_length is not None and len(pc) > max_length:
            pc, mask = pc[-max_length:], mask[-max_length:]
        encoded.append((pc, mask))

    sums: list[float] = []
    counts: list[int] = []
    device = model.device
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            for b in range(0, len(encoded), batch_size):
                chunk = encoded[b : b + batch_size]
                width = max(len(ids) for ids, _ in chunk)
                ids = torch.full((len(chunk), width), pad_id, dtype=torch.long)
                attention = torch.zeros((len(chunk), width), dtype=torch.long)
                score = torch.zeros((len(chunk), width), dtype=torch.float)
                for i, (seq, mask) in enumerate(chunk):
                    ids[i, : len(seq)] = torch.tensor(seq)
                    attention[i, : len(seq)] = 1
                    score[i, : len(seq)] = torch.tensor(mask, dtype=torch.float)
                ids, attention, score = ids.to(device), attention.to(device), score.to(device)
                logp = _sequence_logprobs(model, ids, attention, score)
                sums.extend((-logp).tolist())
                counts.extend(int(c) for c in score[:, 1:].sum(-1).tolist())
    finally:
        if was_training:
            model.train()
    return sums, counts
