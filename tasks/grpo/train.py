"""One GRPO training run: TRL's GRPOTrainer (our `LeanGRPOTrainer`) with Lean-decided rewards.

`train_grpo` implements `tasks.trainers.base.TrainFn` for the curriculum: prompts from
the snapshot's training split, starting from the parent checkpoint (this trainer's of
step k-1, or SFT's of step k with `init_from: sft`; the caller passes it as
`parent_dir`), or from `settings.model`. `run_grpo` is the part shared with
`dojoflow grpo train` (lean-grpo theorem files): given prompt rows and a backend, it
trains and writes the model (or LoRA adapter) into `out_dir` with
`dojoflow_model.json`, `grpo_config.json` (the resolved GRPOConfig) and
`grpo_history.json` (per-step metrics from TRL's logs). Trainer checkpoints live in
`work_dir` and a crashed run resumes from the latest one.

Per-step metrics kept (TRL's names): reward, rewards/<fn>/mean, frac_reward_zero_std,
kl, clip_ratio/region_mean, completions/mean_length, entropy, loss, and ours:
lean/<fn>_accepted (share Lean/replay accepted), dapo/groups_dropped, dgpo/dpo_loss.

    python -c "help('tasks.grpo.train')"
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from storage import atomic
from storage.errors import InputError
from storage.snapshot_ref import SnapshotRef
from tasks.lean.closing import close_quickly
from tasks.models.loading import is_adapter_dir, latest_trainer_checkpoint
from tasks.trainers import lifecycle as step
from tasks.trainers.base import SkipTraining

from .config import GRPOSettings, build_grpo_config
from .data import proof_rows, snapshot_theorems, tactic_rows, to_dataset
from .rewards import LeanRewarder, build_reward_functions
from .signal_watch import learning_signal_watch, steps_without_signal

log = logging.getLogger(__name__)

HISTORY_FILE = "grpo_history.json"
_STEP_KEYS = (
    "loss",
    "reward",
    "reward_std",
    "frac_reward_zero_std",
    "kl",
    "entropy",
    "clip_ratio/region_mean",
    "clip_ratio/low_mean",
    "clip_ratio/high_mean",
    "completions/mean_length",
    "completions/clipped_ratio",
    "num_tokens",
)
_STEP_PREFIXES = ("rewards/", "lean/", "dapo/", "dgpo/")
LEAN_REWARDS = ("lean_tactic", "lean_proof")


def as_settings(settings: GRPOSettings | dict) -> GRPOSettings:
    return step.coerce_settings(settings, GRPOSettings)


def open_reward_backend(settings: GRPOSettings, store):
    """The Lean backend the rewards use, opened and checked before any training starts."""
    from tasks.lean.config import BackendSettings
    from tasks.lean.verified import open_verifier

    backend_settings = BackendSettings.model_validate(settings.backend)
    try:
        return open_verifier(backend_settings, store)
    except InputError:
        raise
    except (OSError, RuntimeError, ImportError) as e:
        raise InputError(
            "GRPOSettings.backend",
            f"the {backend_settings.kind} backend cannot be opened: {e}",
            "Start the backend (or its server), fix backend options, or use backend kind 'replay'.",
        ) from e


def step_history(log_history: list[dict]) -> list[dict]:
    """TRL's per-step log entries, reduced to the metrics Dojoflow reports."""
    steps = []
    for entry in log_history:
        if "step" not in entry or "train_runtime" in entry:
            continue
        kept = {
            k: float(v)
            for k, v in entry.items()
            if (k in _STEP_KEYS or k.startswith(_STEP_PREFIXES)) and isinstance(v, (int, float))
        }
        if kept:
            steps.append({"step": int(entry["step"]), **kept})
    return steps


def _mean(history: list[dict], key: str) -> float | None:
    values = [h[key] for h in history if key in h]
    return round(sum(values) / len(values), 6) if values else None


def _merged_reference(model, work_dir: Path) -> None:
    """TRL reloads the KL reference from the config's name_or_path, which for an adapter merged
    into its base names the base: save the merged starting point and point there instead."""
    reference = work_dir / "reference"
    model.save_pretrained(reference)
    model.config._name_or_path = str(reference)


def _reward_figures(history: list[dict], lean: str | None, rewarder) -> dict:
    """The run's reward figures: means over its steps, the share Lean accepted, the reward cache."""
    return {
        "reward_mean": _mean(history, "reward"),
        "frac_reward_zero_std": _mean(history, "frac_reward_zero_std"),
        "steps_without_signal": steps_without_signal(history),
        **({f"{lean}_accepted": _mean(history, f"lean/{lean}_accepted")} if lean else {}),
        **(
            {"reward_cache_hits": rewarder.stats["cache_hits"], "reward_checks": rewarder.stats["checks"]}
            if rewarder
            else {}
        ),
    }


def _start_figures(start, trained) -> dict:
    return {"model_kind": start.kind, "started_from": start.started_from, "resumed_from": trained.resumed_from}


def _rewards(settings: GRPOSettings, weights: dict, backend, max_completion_length: int):
    """(the Lean rewarder, None when no reward asks Lean; the reward functions; the verified reward's name)."""
    allowed = settings.backend.get("allowed_axioms")  # the backend's allow-list setting, default if unset
    rewarder = LeanRewarder(backend, settings.reward, allowed) if set(weights) & {*LEAN_REWARDS} else None
    funcs = build_reward_functions(list(weights), settings.mode, rewarder, settings.reward, max_completion_length)
    lean = next((n for n in weights if n in LEAN_REWARDS), None)
    return rewarder, funcs, lean


def _train(start, args, rows: list[dict], funcs, algorithm, lean: str | None, callbacks: list, resume):
    """TRL's GRPO trainer with Lean's rewards, trained (or reloaded when finished); (trainer, Trained)."""
    from .lean_trainer import LeanGRPOTrainer

    trainer = LeanGRPOTrainer(
        model=start.model,
        reward_funcs=funcs,
        args=args,
        train_dataset=to_dataset(rows),
        processing_class=start.tokenizer,
        peft_config=start.peft_config,
        callbacks=callbacks,
        algorithm=algorithm,
        verified_reward=lean,
    )
    return trainer, step.train_or_reload(trainer, resume)


def run_grpo(
    settings: GRPOSettings | dict,
    rows: list[dict],
    parent_dir: Path | None,
    out_dir: Path,
    work_dir: Path,
    *,
    backend,
    model_cache_dir: Path | None = None,
    callbacks: list | None = None,
    provenance: dict | None = None,
) -> dict:
    """Train on prompt `rows` (`tasks.grpo.data`) with rewards through `backend`; write `out_dir`."""
    settings = as_settings(settings)
    started = time.monotonic()
    out_dir, work_dir, parent = step.step_dirs(out_dir, work_dir, parent_dir)
    if not rows:
        raise SkipTraining("no prompts to train on")
    trainer_dir = work_dir / step.TRAINER_SUBDIR
    callbacks = step.hf_callbacks(settings, callbacks, learning_signal_watch())
    args = build_grpo_config(settings, trainer_dir)
    algorithm = settings.resolved_algorithm()
    weights = settings.reward_weights()

    start = step.causal_lm_start(settings, parent, step.model_cache(model_cache_dir))
    if (
        args.beta != 0.0
        and start.kind == "full"
        and step.starts_from_parent(settings, parent)
        and is_adapter_dir(parent)
    ):
        _merged_reference(start.model, work_dir)
    rewarder, funcs, lean = _rewards(settings, weights, backend, args.max_completion_length)
    resume = latest_trainer_checkpoint(trainer_dir)
    log.info(
        "GRPO (%s, %s mode) on %d prompts, from %s, %s, resume=%s",
        *(algorithm.name, settings.mode, len(rows), start.started_from, start.kind, resume),
    )
    try:
        trainer, trained = _train(start, args, rows, funcs, algorithm, lean, callbacks, resume)
    finally:
        if rewarder is not None:
            rewarder.close()

    history = step_history(trained.log_history)
    figures = {
        "train_loss": trained.train_loss,
        "steps": trained.steps,
        "prompts": len(rows),
        "algorithm": algorithm.name,
        "mode": settings.mode,
        "checker": getattr(backend, "name", None),
        **_reward_figures(history, lean, rewarder),
        "seconds": round(time.monotonic() - started, 3),
        **_start_figures(start, trained),
        # generated by this process (a resumed run counts from its resume); None if no batch was generated
        "tokens_generated": getattr(trainer, "tokens_generated", None),
    }
    if step.publish_started(
        trainer,
        start,
        out_dir,
        settings,
        config_file="grpo_config.json",
        trainer="grpo",
        figures=figures,
        **(provenance or {}),
    ):
        atomic.write_json(out_dir / HISTORY_FILE, history)
    return figures


def train_grpo(
    settings: GRPOSettings | dict,
    snapshot: SnapshotRef,
    split_kind: str,
    parent_dir: Path | None,
    out_dir: Path,
    work_dir: Path,
    *,
    model_cache_dir: Path | None = None,
    callbacks: list | None = None,
) -> dict:
    """One curriculum step of GRPO on `snapshot`'s training split (module docstring)."""
    from storage.store import Store
    from tasks.models.loading import load_tokenizer

    settings = as_settings(settings)
    store = Store(Path(snapshot.store_root))
    backend = open_reward_backend(settings, store)
    try:
        if settings.mode == "tactic":
            source = parent_dir if step.starts_from_parent(settings, parent_dir) else settings.model
            tokenizer = load_tokenizer(source, step.model_cache(model_cache_dir)) if settings.max_state_tokens else None
            rows = tactic_rows(
                snapshot,
                split_kind,
                settings.prompt(),
                tokenizer=tokenizer,
                max_state_tokens=settings.max_state_tokens,
                max_prompts=settings.max_prompts,
                store=store,
            )
        else:
            specs = snapshot_theorems(snapshot, split_kind, "train", store=store)
            rows = proof_rows(specs, settings.prompt(), max_prompts=settings.max_prompts)
        if not rows:
            raise SkipTraining(
                f"snapshot {snapshot.snapshot_id} has no {settings.mode} prompts in its "
                f"{split_kind}/train split (repositories: {', '.join(snapshot.repo_ids) or 'none'})"
            )
        return run_grpo(
            settings,
            rows,
            parent_dir,
            out_dir,
            work_dir,
            backend=backend,
            model_cache_dir=model_cache_dir,
            callbacks=callbacks,
            provenance={
                "snapshot_id": snapshot.snapshot_id,
                "split_kind": split_kind,
                "parent_dir": str(parent_dir) if parent_dir is not None else None,
            },
        )
    finally:
        close_quickly(backend)  # without LeanInteract's full collections (tasks/lean/closing.py)
