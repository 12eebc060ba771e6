"""Score a whole-proof checkpoint: pass@k of sampled whole proofs, judged by a Lean backend.

`evaluate_sft_proof` implements `tasks.trainers.base.EvaluateFn`. It is the proving evaluation in
whole-proof mode (tasks/proving/evaluate.py: the same theorem choice, search, verdict rule, pass@k
estimator and 95% intervals), with the checkpoint writing `k` proofs per theorem from its statement
(tasks/generate/checkpoint.py asks a whole-proof checkpoint in its training prompt):

Every row is named `sampled_<name>` (the proving evaluation of the same checkpoint writes the plain
names, and the catalog keeps one row per checkpoint, repository, split and name):

- `<checker>_pass@1`, `<checker>_pass@k`: named after the backend that decided them, so a figure from
  `replay` (no Lean: it accepts only proofs made of the theorem's traced steps, a lower bound on what
  Lean would accept) never reads as Lean's (`repl_pass@k`, `kimina_pass@k`);
- `baseline_<checker>_pass@k`: the closing-tactics baseline (`simp`, `rfl`, `omega`, ... each as a
  one-tactic proof) on the same theorems, backend and k;
- `proving_*` counts beside them (errors, not started, untried), as the proving evaluation reports.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from tasks.metric_registry import register_alias
from tasks.trainers.base import EvaluationJob, Metric, evaluation

from .config import SFTProofSettings


def proving_settings(settings: SFTProofSettings, splits: list[str]):
    """The proving evaluation's settings that whole-proof sampling of this checkpoint amounts to."""
    from tasks.generate.config import GeneratorSettings
    from tasks.proving.config import ProvingSettings

    ev = settings.evaluation
    generator = GeneratorSettings(
        kind="checkpoint", decoding="sample", temperature=ev.temperature, max_proof_tokens=ev.max_proof_tokens
    )
    return ProvingSettings(
        backend=ev.backend, generator=generator, mode="whole_proof", num_tactics=ev.k, attempts=1, k=ev.k,
        splits=list(splits), max_theorems=ev.max_theorems, timeout_s=ev.timeout_s, seed=ev.seed,
    )  # fmt: skip


PREFIX = "sampled_"  # the proving evaluation's rows of the same checkpoint are named as it names them
register_alias(PREFIX + "{metric}")  # and mean what they mean (tasks/metric_registry.py)


def _metrics(rows: list[Metric]) -> list[Metric]:
    """Metric rows named `sampled_<metric>`: the catalog keys a metric by (run, checkpoint, repository, split,
    name), so without the prefix the proving evaluation of the same checkpoint (same names) replaces them."""
    return [dataclasses.replace(r, metric=PREFIX + r.metric) for r in rows]


@evaluation
def evaluate_sft_proof(settings: SFTProofSettings | dict, job: EvaluationJob) -> list[Metric]:
    """pass@1 and pass@k of whole-proof sampling per (repository, split), and the baseline's."""
    checkpoint_dir, snapshot, split_kind, splits, repo_ids, model_cache_dir = job.fields()
    from storage.store import Store
    from tasks.proving.evaluate import prove_theorems, proving_metrics, select_theorems
    from tasks.trainers.lifecycle import coerce_settings

    settings = coerce_settings(settings, SFTProofSettings)
    splits = [s for s in splits if s in ("train", "val", "test")]
    if not splits or not repo_ids:
        return []
    store = Store(Path(snapshot.store_root))
    proving = proving_settings(settings, splits)
    chosen = select_theorems(store, list(repo_ids), split_kind, proving)
    theorems, untried = list(chosen.theorems), list(chosen.untried)
    if not theorems:
        return _metrics(proving_metrics([], proving, untried))
    records = prove_theorems(store, proving, str(checkpoint_dir), theorems, model_cache_dir)
    rows = proving_metrics(records, proving, untried)
    if settings.evaluation.baseline:
        base = prove_theorems(store, proving, None, theorems, model_cache_dir, baseline=True)
        rows += proving_metrics(base, proving, baseline=True)
    return _metrics(rows)
