"""Score a GRPO checkpoint: whole-proof sampling and pass@k, judged by a Lean backend.

For each theorem, `k` proofs are sampled from the checkpoint (proof-mode prompt:
the statement ending in `:= by`), each is checked by the backend and judged by the
verdict rule (`tasks.lean.verdict.judge`); a theorem with `c` of `n` proofs proved
scores the unbiased pass@k (Chen et al. 2021; docs/grpo.md). Metric names carry the
checker, so a replay figure never reads as Lean's: `<checker>_pass@1`,
and `<checker>_pass@k` (count = theorems attempted).

`evaluate_grpo` implements `tasks.trainers.base.EvaluateFn` on a snapshot's splits, and
also records the step's training figures (from the checkpoint's grpo_history.json)
under split `train` of the step's repository (the last of `repo_ids`, curriculum
order): `train_reward`, `train_accepted` (share of completions the backend accepted) and `train_frac_reward_zero_std`, each the mean over the step's
optimizer steps, so the report plots them per step;
`prove_theorems` is the part `dojoflow grpo evaluate` uses on a theorem file.

    python -c "help('tasks.grpo.evaluate')"
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from tasks.lean.closing import close_quickly
from tasks.metric_registry import register_metric
from tasks.models.loading import default_model_cache, load_causal_lm
from tasks.search.pass_at_k import pass_at_k as unbiased_pass_at_k  # Chen et al. 2021, one estimator
from tasks.stats import interval_fields
from tasks.trainers.base import EvaluationJob, Metric, evaluation

from .config import PROOF_SYSTEM_PROMPT, GRPOSettings
from .data import proof_prompt
from .rewards import completion_text, proof_of, refusal

# The step's training figures (split `train`); pass@k is declared beside its estimator
# (tasks/search/pass_at_k.py). See tasks/metric_registry.py.
register_metric("train_reward", direction="higher", kind="score", unit="reward", description="mean GRPO reward")
register_metric("train_accepted", direction="higher", kind="score", unit="share", description="share Lean accepted")
register_metric(
    "train_frac_reward_zero_std", direction=None, kind="diagnostic", unit="share",
    description="share of groups whose rewards were all equal (no learning signal)",
)  # fmt: skip


def sample_proofs(
    model,
    tokenizer,
    prompts: list[str],
    k: int,
    *,
    max_new_tokens: int,
    temperature: float,
    system_prompt: str = PROOF_SYSTEM_PROMPT,
) -> list[list[str]]:
    """`k` sampled proofs for each user prompt (chat template, generation prompt added)."""
    import torch

    texts = [
        tokenizer.apply_chat_template(
            [{"role": "system", "content": system_prompt}, {"role": "user", "content": p}],
            tokenize=False,
            add_generation_prompt=True,
        )
        for p in prompts
    ]
    tokenizer.padding_side = "left"
    batch = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False).to(model.device)
    model.eval()
    with torch.no_grad():
        out = model.generate(
            **batch,
            do_sample=True,
            temperature=temperature,
            num_return_sequences=k,
            max_new_tokens=max_new_tokens,
            pad_token_id=tokenizer.pad_token_id,
        )
    gen = out[:, batch["input_ids"].shape[1] :]
    decoded = tokenizer.batch_decode(gen, skip_special_tokens=True)
    return [decoded[i * k : (i + 1) * k] for i in range(len(prompts))]


def prove_theorems(
    model,
    tokenizer,
    specs: list,
    backend,
    *,
    k: int,
    max_new_tokens: int,
    temperature: float,
    contexts: dict[str, str] | None = None,
    system_prompt: str = PROOF_SYSTEM_PROMPT,
    batch_size: int = 4,
) -> list[dict]:
    """For each theorem: how many of `k` sampled proofs were proved (guard included), and one proof if any."""
    contexts = contexts or {}
    results = []
    for start in range(0, len(specs), batch_size):
        chunk = specs[start : start + batch_size]
        prompts = [proof_prompt(s.statement, contexts.get(s.full_name, "")) for s in chunk]
        proofs = sample_proofs(
            model,
            tokenizer,
            prompts,
            k,
            max_new_tokens=max_new_tokens,
            temperature=temperature,
            system_prompt=system_prompt,
        )
        for spec, attempts in zip(chunk, proofs):
            results.append(judged(spec, [proof_of(completion_text(text)) for text in attempts], backend))
    return results


def judged(spec, proofs: list[str], backend) -> dict:
    """One theorem's result: how many of `proofs` (tactic blocks) the backend and the verdict
    rule accept (tasks/lean/verdict.py), and one accepted proof if any."""
    from tasks.lean.verdict import judge

    proved, unverified, example = 0, 0, None
    for proof in proofs:
        if not proof.strip() or refusal(proof):
            continue
        verdict = judge(backend.check_proof(spec, proof), proof)
        unverified += verdict.status == "unverified"
        if verdict.proved:
            proved += 1
            example = example or proof
    return {
        "repo_id": spec.repo_id,
        "full_name": spec.full_name,
        "n": len(proofs),
        "proved": proved,
        "unverified": unverified,  # finished, but the backend cannot verify (the Dojo)
        "proof": example,
    }


def baseline_results(specs: list, backend, k: int) -> list[dict]:
    """The closing-tactics baseline (tasks/generate/baseline.py) held to the model's k: each of its
    first k tactics tried as a whole proof, checked by the same backend and verdict rule."""
    from tasks.generate.baseline import ClosingTacticsGenerator

    tactics = [tactic for tactic, _ in ClosingTacticsGenerator().generate_proofs([None], k)[0]]
    return [judged(spec, tactics, backend) for spec in specs]


def prove_under_seed(model, tokenizer, specs: list, backend, evaluation, **options) -> list[dict]:
    """`prove_theorems` with `evaluation`'s k, temperature and token budget, sampled under its
    seed (torch's generators restored afterwards, so training's random stream is untouched)."""
    import torch

    with torch.random.fork_rng():
        torch.manual_seed(evaluation.seed)
        return prove_theorems(
            model,
            tokenizer,
            specs,
            backend,
            k=evaluation.k,
            temperature=evaluation.temperature,
            max_new_tokens=evaluation.max_new_tokens,
            **options,
        )


def decided(results: list[dict]) -> list[dict]:
    """The theorems pass@k counts: a theorem whose only finished proofs were unverified is left
    out (neither a proof nor a failure: the backend could not establish the verdict rule)."""
    return [r for r in results if r["proved"] or not r.get("unverified")]


def pass_at(results: list[dict], k: int) -> float:
    """Mean pass@k over the `decided` theorems."""
    counted = decided(results)
    return sum(unbiased_pass_at_k(r["n"], r["proved"], k) for r in counted) / len(counted) if counted else 0.0


def pass_metrics(results: list[dict], ks, repo: str, split: str, checker: str) -> list[Metric]:
    """`{checker}_pass@k` rows: the mean, its interval and n over the same `decided` theorems."""
    counted = decided(results)
    rows = []
    for k in ks:
        scores = [unbiased_pass_at_k(r["n"], r["proved"], k) for r in counted]
        rows.append(
            Metric(repo, split, f"{checker}_pass@{k}", pass_at(results, k), len(counted), **interval_fields(scores))
        )
    return rows


@evaluation
def evaluate_grpo(settings: GRPOSettings | dict, job: EvaluationJob) -> list[Metric]:
    """pass@1 and pass@k of whole-proof sampling per (repository, split), named by the checker."""
    checkpoint_dir, snapshot, split_kind, splits, repo_ids, model_cache_dir = job.fields()

    from storage.ids import unit_interval
    from storage.store import Store

    from .data import snapshot_theorems
    from .train import as_settings, open_reward_backend

    settings = as_settings(settings)
    ev = settings.evaluation
    store = Store(Path(snapshot.store_root))
    backend = open_reward_backend(settings, store)
    cache = Path(model_cache_dir) if model_cache_dir is not None else default_model_cache()
    model = tokenizer = None
    metrics: list[Metric] = []
    try:
        for split in splits:
            by_repo = defaultdict(list)
            for spec in snapshot_theorems(snapshot, split_kind, split, repo_ids=list(repo_ids), store=store):
                by_repo[spec.repo_id].append(spec)
            for repo in repo_ids:
                specs = sorted(
                    by_repo.get(repo, []), key=lambda s: unit_interval("grpo-eval", s.file_path, s.full_name)
                )
                specs = specs[: ev.max_theorems] if ev.max_theorems else specs
                if not specs:
                    continue
                if model is None:
                    model, tokenizer = load_causal_lm(checkpoint_dir, cache, dtype=settings.model_dtype)
                results = prove_under_seed(model, tokenizer, specs, backend, ev)
                metrics += pass_metrics(results, sorted({1, ev.k}), repo, split, backend.name)
    finally:
        close_quickly(backend)  # without LeanInteract's full collections (tasks/lean/closing.py)
    return metrics + training_metrics(Path(checkpoint_dir), repo_ids[-1] if repo_ids else None)


def training_metrics(checkpoint_dir: Path, repo_id: str | None) -> list[Metric]:
    """The step's training figures as metric rows (split 'train'); none without a history."""
    import json

    from .train import HISTORY_FILE

    path = checkpoint_dir / HISTORY_FILE
    if repo_id is None or not path.is_file():
        return []
    history = json.loads(path.read_text())
    out = []
    for name, key in (("train_reward", "reward"), ("train_frac_reward_zero_std", "frac_reward_zero_std")):
        values = [h[key] for h in history if key in h]
        if values:
            out.append(Metric(repo_id, "train", name, sum(values) / len(values), len(values)))
    accepted = [v for h in history for k, v in h.items() if k.startswith("lean/") and k.endswith("_accepted")]
    if accepted:
        out.append(Metric(repo_id, "train", "train_accepted", sum(accepted) / len(accepted), len(accepted)))
    return out
