"""Score an SFT checkpoint on each (repository, split) of a snapshot.

`evaluate_sft` implements `tasks.trainers.base.EvaluateFn`. For every repository and
split with at least one usable tactic it returns three `Metric` rows (count = the
number of examples scored):

- `completion_loss`: mean negative log-likelihood per tactic token (the training
  loss's measure: completion tokens only, end-of-turn token included);
- `top1_accuracy`: share of states whose best generated tactic equals the traced one;
- `top{k}_accuracy`: share of states where one of the k generated tactics does
  (beam search with k beams, or k samples; only when k > 1);
- `top1_majority_baseline`: share of the same states whose traced tactic is the most
  common tactic of the train split (of the repositories evaluated). A model that has
  learned only "say the most common tactic" scores exactly this on `top1_accuracy`, which
  is why a tiny model's top-1 can stay flat while its loss moves (README, "What the
  numbers mean").

Tactics are compared by first line with whitespace collapsed. A (repository, split)
with no examples gives no rows, never zeros. At most `max_eval_examples` per pair are
scored, chosen by a fixed hash of (theorem, step), so successive checkpoints are
scored on the same examples.

    python -c "help('tasks.sft.evaluate')"
"""

from __future__ import annotations

import contextlib
import logging
from collections import Counter, defaultdict
from pathlib import Path

import pyarrow as pa

from storage.ids import unit_interval
from tasks.metric_registry import register_metric
from tasks.models.loading import default_model_cache, load_causal_lm
from tasks.stats import proportion_fields
from tasks.trainers.base import EvaluationJob, Metric, evaluation
from tasks.trainers.lifecycle import coerce_settings

from .config import SFTSettings
from .data import SFTExamples, build_examples, is_sorry, normalize_tactic, read_tactics
from .generate import completion_token_losses, generate_tactics, generate_tactics_batch

log = logging.getLogger(__name__)

# What each figure means (tasks/metric_registry.py); exact names win over the `top{k}` family.
register_metric(
    "completion_loss", direction="lower", kind="score", unit="nats/token", question="learning",
    description="mean negative log-likelihood per tactic token",
)  # fmt: skip
register_metric(
    "top1_accuracy", direction="higher", kind="score", unit="share", question="learning",
    baseline="top1_majority_baseline", description="share of states whose best tactic is the traced one",
)  # fmt: skip
register_metric(
    "top{k}_accuracy", direction="higher", kind="score", unit="share", question="learning",
    description="share of states where one of k generated tactics is the traced one",
)  # fmt: skip
register_metric(
    "top1_majority_baseline", direction="higher", kind="baseline", unit="share",
    description="top-1 of always saying the train split's most common tactic: a property of the split",
)  # fmt: skip

__all__ = ["evaluate_sft", "generate_tactics", "generate_tactics_batch", "score_examples"]


def _device():
    import torch

    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def _pick(examples: SFTExamples, limit: int | None) -> list[int]:
    order = list(range(len(examples)))
    if limit is None or len(order) <= limit:
        return order
    keyed = sorted(order, key=lambda i: unit_interval(examples.theorem_ids[i], str(examples.idxs[i])))
    return sorted(keyed[:limit])


def score_examples(model, tokenizer, examples: SFTExamples, indices: list[int], settings: SFTSettings) -> dict:
    """Loss and accuracies of `model` on the chosen examples: {loss, top1, topk, count}."""
    ev = settings.evaluation
    prompts = [examples.prompts[i] for i in indices]
    completions = [examples.completions[i] for i in indices]
    sums, counts = completion_token_losses(
        model,
        tokenizer,
        prompts,
        completions,
        batch_size=ev.batch_size,
        max_length=settings.training.get("max_length", 1024),
    )
    hits1 = hitsk = 0
    for b in range(0, len(indices), ev.batch_size):
        chunk = indices[b : b + ev.batch_size]
        generated = generate_tactics_batch(
            model,
            tokenizer,
            [examples.states[i] for i in chunk],
            ev.top_k,
            system_prompt=settings.system_prompt,
            max_new_tokens=ev.max_new_tokens,
            decoding=ev.decoding,
            temperature=ev.temperature,
            max_state_tokens=None,  # the states are cut already
        )
        for i, candidates in zip(chunk, generated):
            gold = normalize_tactic(examples.tactics[i])
            found = [normalize_tactic(t) for t, _ in candidates]
            hits1 += bool(found) and found[0] == gold
            hitsk += gold in found
    n = len(indices)
    tokens = sum(counts)
    return {
        "loss": sum(sums) / tokens if tokens else float("nan"),
        "top1": hits1 / n,
        "topk": hitsk / n,
        "count": n,
        "tokens": tokens,
    }


def _repo_metrics(model, tokenizer, sub, settings: SFTSettings, majority: str | None, repo: str, split: str):
    """The metric rows of one (repository, split): completion loss, top-1/top-k accuracy, majority baseline."""
    import torch

    ev = settings.evaluation
    chosen = _pick(sub, ev.max_eval_examples)
    rng = (
        torch.random.fork_rng(devices=[torch.cuda.current_device()] if torch.cuda.is_available() else [])
        if ev.decoding == "sample"
        else contextlib.nullcontext()
    )
    with rng:
        if ev.decoding == "sample":
            torch.manual_seed(ev.seed)
        s = score_examples(model, tokenizer, sub, chosen, settings)
    n = s["count"]
    top1, topk = float(s["top1"]), float(s["topk"])
    metrics = [
        Metric(repo, split, "completion_loss", float(s["loss"]), n),
        Metric(repo, split, "top1_accuracy", top1, n, **proportion_fields(round(top1 * n), n)),
    ]
    if ev.top_k > 1:
        metrics.append(Metric(repo, split, f"top{ev.top_k}_accuracy", topk, n, **proportion_fields(round(topk * n), n)))
    share = None
    if majority is not None:
        share = sum(normalize_tactic(sub.tactics[i]) == majority for i in chosen) / n
        metrics.append(Metric(repo, split, "top1_majority_baseline", share, n))
    log.info(
        "evaluated %s %s: %d states, completion_loss %.4g, top1 %.3g (majority baseline %s)",
        *(repo, split, n, s["loss"], s["top1"], "n/a" if share is None else f"{share:.3g}"),
    )
    return metrics


@evaluation
def evaluate_sft(settings: SFTSettings | dict, job: EvaluationJob) -> list[Metric]:
    """Metric rows for each (repository, split) of `snapshot` that has examples."""
    checkpoint_dir, snapshot, split_kind, splits, repo_ids, model_cache_dir = job.fields()
    settings = coerce_settings(settings, SFTSettings)
    cache = Path(model_cache_dir) if model_cache_dir is not None else default_model_cache()
    model = tokenizer = None
    metrics: list[Metric] = []
    majority = majority_tactic(read_tactics(snapshot, split_kind, "train", repo_ids=list(repo_ids)))
    for split in splits:
        table = read_tactics(snapshot, split_kind, split, repo_ids=list(repo_ids))
        if table.num_rows == 0:
            continue
        if model is None:
            model, tokenizer = load_causal_lm(checkpoint_dir, cache, dtype=settings.model_dtype)
            model.to(_device())
        examples = build_examples(
            table, settings.system_prompt, tokenizer=tokenizer, max_state_tokens=settings.max_state_tokens
        )
        by_repo: dict[str, list[int]] = defaultdict(list)
        for i, repo in enumerate(examples.repo_ids):
            by_repo[repo].append(i)
        for repo in repo_ids:
            rows = by_repo.get(repo)
            if not rows:
                continue
            metrics += _repo_metrics(model, tokenizer, examples.subset(rows), settings, majority, repo, split)
    return metrics


def majority_tactic(train: pa.Table) -> str | None:
    """The most common (normalised) tactic of a train split, `sorry` excluded; ties go to the
    alphabetically first, so the baseline is the same on every machine."""
    counts = Counter(normalize_tactic(t) for t in train.column("tactic").to_pylist() if t and not is_sorry(t))
    if not counts:
        return None
    return min(counts, key=lambda t: (-counts[t], t))
