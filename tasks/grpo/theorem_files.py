"""lean-grpo compatibility: its theorem files, its YAML config keys, and the runs behind
`dojoflow grpo train THEOREMS.jsonl` and `dojoflow grpo evaluate CHECKPOINT THEOREMS.jsonl`.

A theorem file is JSONL (one `{"name", "statement", "context", "imports"}` per line), a
JSON list of such objects, or `{"theorems": [...]}`; `name` and `statement` are
required. A bad line is an InputError naming the file and the line number.

A lean-grpo YAML config maps onto `GRPOSettings` (docs/grpo.md has the table); a key
lean-grpo does not have is an error, and the keys that have no Dojoflow meaning are
named in the log, never silently dropped.

Theorems are matched to the store by name (`full_name`, or its last component), so the
replay backend and the REPL's project checkouts know them; an unmatched theorem gets a
TheoremSpec with its statement only, which whole-proof backends (repl, kimina) check.

    python -c "help('tasks.grpo.theorem_files')"
"""

from __future__ import annotations

import json
import logging
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from storage.errors import InputError, some_names
from tasks.lean.closing import close_quickly

from .config import GRPOSettings

log = logging.getLogger(__name__)

FILE_REPO_ID = "theorem-file"
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True)
class FileTheorem:
    """One theorem of a lean-grpo theorem file."""

    name: str
    statement: str
    context: str = ""
    imports: tuple[str, ...] = field(default_factory=tuple)


def _theorem(obj: Any, path: Path, where: str) -> FileTheorem:
    if not isinstance(obj, dict):
        raise InputError(
            path,
            f"expected an object with name and statement, got {type(obj).__name__}",
            'write {"name": ..., "statement": ...}',
            where=where,
        )
    unknown = sorted(set(obj) - {"name", "statement", "context", "imports"})
    if unknown:
        raise InputError(
            path, f"unknown keys {', '.join(unknown)}", "use only name, statement, context, imports", where=where
        )
    for key in ("name", "statement"):
        if not isinstance(obj.get(key), str) or not obj[key].strip():
            raise InputError(
                path, f"`{key}` is missing or not a non-empty string", f"give every theorem a {key}", where=where
            )
    bad = _CONTROL.search(obj["name"].strip())
    if bad:
        raise InputError(
            path,
            f"`name` {obj['name']!r} holds the control character {bad.group()!r}",
            "give the theorem's Lean name (Lean names hold no newline, NUL or other control character)",
            where=where,
        )
    if "\x00" in obj["statement"]:
        raise InputError(path, "`statement` holds a NUL character", "remove it: Lean source is text", where=where)
    imports = obj.get("imports") or []
    if not isinstance(imports, list) or not all(isinstance(i, str) for i in imports):
        raise InputError(path, "`imports` must be a list of module names", 'e.g. "imports": ["Mathlib"]', where=where)
    context = obj.get("context") or ""
    if not isinstance(context, str):
        raise InputError(
            path, "`context` must be a string", "give the Lean text the statement needs, or omit it", where=where
        )
    return FileTheorem(obj["name"].strip(), obj["statement"].strip(), context, tuple(imports))


_DEEP_FIX = "a theorem file's records are {name, statement} objects, a few levels deep"


def read_theorem_file(path: str | Path) -> list[FileTheorem]:
    """The theorems of a lean-grpo theorem file (JSONL, a JSON list, or {"theorems": [...]})."""
    path = Path(path)
    if not path.exists():
        raise InputError(path, "no such file", "give the path of a lean-grpo theorem file (.jsonl or .json)")
    if not path.is_file():
        raise InputError(path, "is not a regular file", "give the path of a lean-grpo theorem file (.jsonl or .json)")
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise InputError(
            path,
            f"is not UTF-8 text (byte 0x{data[e.start]:02x} on line {line})",
            "save the file as UTF-8 (JSON text is UTF-8)",
            where=f"line {line}",
        ) from None
    stripped = text.lstrip()
    whole = None
    if stripped.startswith(("[", "{")):
        try:
            whole = json.loads(text)
        except json.JSONDecodeError:
            whole = None  # JSONL whose first line is an object
        except RecursionError:
            raise InputError(path, "holds JSON nested too deeply to read", _DEEP_FIX) from None
    if isinstance(whole, list):
        items = [(obj, f"item {i}") for i, obj in enumerate(whole)]
    elif isinstance(whole, dict) and "theorems" in whole:
        if not isinstance(whole["theorems"], list):
            raise InputError(path, "`theorems` is not a list", 'write {"theorems": [{...}, ...]}')
        items = [(obj, f"theorems[{i}]") for i, obj in enumerate(whole["theorems"])]
    else:
        items = []
        for n, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                items.append((json.loads(line), f"line {n}"))
            except json.JSONDecodeError as e:
                raise InputError(
                    path,
                    f"line {n} is not valid JSON ({e.msg} at column {e.colno})",
                    "fix that line: one JSON object per line",
                    where=f"line {n}",
                ) from None
            except RecursionError:
                raise InputError(
                    path, f"line {n} holds JSON nested too deeply to read", _DEEP_FIX, where=f"line {n}"
                ) from None
    theorems = [_theorem(obj, path, where) for obj, where in items]
    if not theorems:
        raise InputError(path, "holds no theorems", "add one JSON object per theorem")
    duplicates = sorted(n for n, count in Counter(t.name for t in theorems).items() if count > 1)  # linear
    if duplicates:
        shown = ", ".join(duplicates[:10]) + (f" and {len(duplicates) - 10} more" if len(duplicates) > 10 else "")
        raise InputError(path, f"theorem names appear twice: {shown}", "give each theorem its own name")
    return theorems


# -- lean-grpo's YAML keys -> GRPOSettings ----------------------------------------------
# key -> (section, name): section "" is a GRPOSettings field, "training" a GRPOConfig argument,
# "algorithm_config", "lora", or "cli" (handled by the command).
YAML_KEYS: dict[str, tuple[str, str]] = {
    "base_model": ("", "model"),
    "lora_rank": ("lora", "r"),
    "lora_alpha": ("lora", "alpha"),
    "algorithm": ("", "algorithm"),
    "algorithm_config": ("", "algorithm_config"),
    "learning_rate": ("training", "learning_rate"),
    "num_train_epochs": ("training", "num_train_epochs"),
    "per_device_train_batch_size": ("training", "per_device_train_batch_size"),
    "gradient_accumulation_steps": ("training", "gradient_accumulation_steps"),
    "warmup_ratio": ("training", "warmup_steps"),  # transformers 5: a float < 1 is a ratio
    "max_grad_norm": ("training", "max_grad_norm"),
    "num_generations": ("training", "num_generations"),
    "max_prompt_length": ("", "max_state_tokens"),
    "max_completion_length": ("training", "max_completion_length"),
    "beta": ("algorithm_config", "beta"),
    "temperature": ("training", "temperature"),
    "reward_type": ("", "reward_preset"),
    "use_vllm": ("training", "use_vllm"),
    "gpu_memory_utilization": ("training", "vllm_gpu_memory_utilization"),
    "inference_url": ("training", "vllm_server_base_url"),
    "output_dir": ("cli", "output"),
    "logging_steps": ("training", "logging_steps"),
    "save_steps": ("training", "save_steps"),
    "report_to": ("training", "report_to"),
    "max_proof_steps": ("ignored", "a whole proof is one completion here; its length is max_completion_length"),
}


def settings_from_lean_grpo(config: dict[str, Any], source: str = "config") -> tuple[dict[str, Any], dict[str, Any]]:
    """(GRPOSettings fields, command options) from lean-grpo's YAML keys; unknown keys are an error."""
    unknown = sorted(set(config) - set(YAML_KEYS))
    if unknown:
        raise InputError(
            source,
            f"{', '.join(map(repr, unknown))} is not a lean-grpo config key",
            f"use only: {', '.join(YAML_KEYS)}",
        )
    fields: dict[str, Any] = {}
    cli: dict[str, Any] = {}
    for key, value in config.items():
        section, name = YAML_KEYS[key]
        if section == "":
            fields[name] = value
        elif section == "cli":
            cli[name] = value
        elif section == "ignored":
            log.warning("%s: %s is ignored: %s", source, key, name)
        else:
            fields.setdefault(section, {})[name] = value
    if fields.get("training", {}).get("vllm_server_base_url"):
        fields["training"].setdefault("vllm_mode", "server")
    return fields, cli


def read_lean_grpo_config(path: str | Path) -> tuple[dict[str, Any], dict[str, Any]]:
    from tasks.yaml_config import load_yaml_mapping

    return settings_from_lean_grpo(load_yaml_mapping(path, "docs/grpo.md"), str(path))


def merge_fields(*layers: dict[str, Any]) -> dict[str, Any]:
    """Later layers win; nested dicts (training, algorithm_config, lora) are merged key by key."""
    out: dict[str, Any] = {}
    for layer in layers:
        for key, value in layer.items():
            if isinstance(value, dict) and isinstance(out.get(key), dict):
                out[key] = {**out[key], **value}
            else:
                out[key] = value
    return out


# -- theorems -> specs, rows, runs -----------------------------------------------------------


def theorem_specs(theorems: list[FileTheorem], store=None) -> list:
    """TheoremSpecs: the store's theorem of that name when there is one, else the file's statement."""
    from tasks.lean.backend import TheoremSpec

    known: dict[str, list] = {}
    if store is not None and store.repositories():
        from tasks.lean.theorems import load_theorems

        for spec in load_theorems(store):
            known.setdefault(spec.full_name, []).append(spec)
            known.setdefault(spec.full_name.rsplit(".", 1)[-1], []).append(spec)
    out = []
    for t in theorems:
        matches = known.get(t.name, [])
        if len(matches) == 1:
            out.append(matches[0])
        else:
            if len(matches) > 1:
                log.warning(
                    "theorem %s matches %d theorems in the store; using the file's statement", t.name, len(matches)
                )
            out.append(
                TheoremSpec(
                    repo_id=FILE_REPO_ID, url="", commit="", file_path="", full_name=t.name, statement=t.statement
                )
            )
    return out


def checkable_specs(settings: GRPOSettings, theorems: list[FileTheorem], store) -> list:
    """The theorems' specs; with a backend that needs no statement (replay) every theorem must be in the store."""
    specs = theorem_specs(theorems, store)
    unknown = [s.full_name for s in specs if s.repo_id == FILE_REPO_ID]
    from tasks.lean.availability import check_versions
    from tasks.lean.config import BackendSettings
    from tasks.lean.registry import get

    kind = settings.backend.get("kind", BackendSettings.model_fields["kind"].default)
    if unknown and not get(kind).needs_statement:
        raise InputError(
            some_names(unknown),
            f"not in the store, so the {kind} backend (which answers by name from the store) cannot check them",
            "import the repository that traces them (dojoflow import), remove them from the file, or "
            "use --backend repl or kimina, which check the statement itself",
        )
    # a repository at a Lean version the backend cannot run stops the run now (tasks/lean/versions.py)
    check_versions(BackendSettings.model_validate(settings.backend), [s for s in specs if s.repo_id != FILE_REPO_ID])
    return specs


def train_on_theorem_file(
    settings: GRPOSettings,
    theorems: list[FileTheorem],
    out_dir: Path,
    work_dir: Path,
    store,
    *,
    model_cache_dir: Path | None = None,
) -> dict:
    """`dojoflow grpo train`: whole-proof GRPO on the file's theorems (proof mode)."""
    from .data import proof_rows
    from .train import open_reward_backend, run_grpo

    specs = checkable_specs(settings, theorems, store)
    contexts = {s.full_name: t.context for s, t in zip(specs, theorems)}
    rows = proof_rows(specs, settings.prompt(), contexts=contexts, max_prompts=settings.max_prompts)
    backend = open_reward_backend(settings, store)
    try:
        figures = run_grpo(
            settings,
            rows,
            None,
            out_dir,
            work_dir,
            backend=backend,
            model_cache_dir=model_cache_dir,
            provenance={"theorem_count": len(theorems)},
        )
    finally:
        close_quickly(backend)  # without LeanInteract's full collections (tasks/lean/closing.py)
    figures["matched_in_store"] = sum(s.repo_id != FILE_REPO_ID for s in specs)
    return figures


TRAIN_JOB = "tasks.grpo.theorem_files:train_theorem_file_job"  # the worker's entry (tasks/trainers/worker.py)


def train_theorem_file(
    settings: GRPOSettings, theorem_file: str, out_dir: Path, work_dir: Path, home: str, *, model_cache_dir=None
) -> dict:
    """`dojoflow grpo train`'s training, launched as the curriculum's trainers are
    (tasks/checkpoints.py): in this process with the default `launch:` (one process, Dojoflow's
    Python), otherwise in torchrun's processes under `launch`, supervised here
    (tasks/trainers/supervise.py): each rank runs `train_theorem_file_job`, rank 0 writes the
    checkpoint."""
    from tasks.trainers.launch import launch_of, threads_of_a_child

    launch = launch_of(settings)
    if launch.in_process():
        from storage.store import Store

        store = Store.open(home)
        with threads_of_a_child(launch):  # what a 1-process child would compute
            return train_on_theorem_file(
                settings, read_theorem_file(theorem_file), out_dir, work_dir, store, model_cache_dir=model_cache_dir
            )
    from tasks.models.loading import resolve_model
    from tasks.trainers.lifecycle import model_cache
    from tasks.trainers.supervise import call_in_child

    model_cache_dir = model_cache(model_cache_dir)
    resolve_model(settings.model, model_cache_dir)  # a builtin model built once here, not by every rank at once
    arguments = {
        "settings": settings.model_dump(mode="json"),
        "theorem_file": str(Path(theorem_file).resolve()),
        "out_dir": str(out_dir),
        "work_dir": str(work_dir),
        "home": str(home),
        "model_cache_dir": str(model_cache_dir) if model_cache_dir is not None else None,
    }
    return call_in_child("grpo", TRAIN_JOB, arguments, out_dir, work_dir, launch=launch)


def train_theorem_file_job(
    settings: dict, theorem_file: str, out_dir: str, work_dir: str, home: str, model_cache_dir: str | None
) -> dict:
    """One rank of a launched `train_theorem_file` (JSON arguments; no Prefect)."""
    from storage.store import Store

    return train_on_theorem_file(
        GRPOSettings.model_validate(settings),
        read_theorem_file(theorem_file),
        Path(out_dir),
        Path(work_dir),
        Store.open(home),
        model_cache_dir=Path(model_cache_dir) if model_cache_dir else None,
    )


def evaluate_on_theorem_file(
    settings: GRPOSettings, checkpoint: Path, theorems: list[FileTheorem], store, *, model_cache_dir: Path | None = None
) -> dict:
    """`dojoflow grpo evaluate`: pass@1 and pass@k of whole-proof sampling, named by the checker."""

    from tasks.models.loading import default_model_cache, load_causal_lm

    from .evaluate import baseline_results, pass_at, pass_metrics, prove_under_seed
    from .train import open_reward_backend

    ev = settings.evaluation
    specs = checkable_specs(settings, theorems, store)
    contexts = {s.full_name: t.context for s, t in zip(specs, theorems)}
    cache = Path(model_cache_dir) if model_cache_dir is not None else default_model_cache()
    model, tokenizer = load_causal_lm(checkpoint, cache, dtype=settings.model_dtype)
    backend = open_reward_backend(settings, store)
    try:
        results = prove_under_seed(
            model, tokenizer, specs, backend, ev, contexts=contexts, system_prompt=settings.prompt()
        )
        baseline = baseline_results(specs, backend, ev.k)  # beside every figure, as the curriculum's tables
    finally:
        close_quickly(backend)  # without LeanInteract's full collections (tasks/lean/closing.py)
    checker = backend.name
    out = {"checker": checker, "k": ev.k, "theorems": len(results), "results": results, "intervals": {}}
    for prefix, found in (("", results), ("baseline_", baseline)):
        out |= {f"{prefix}{checker}_pass@{k}": pass_at(found, k) for k in (1, ev.k)}
        # each figure's 95% interval over the decided theorems (tasks/stats.py), as the curriculum reports it
        metrics = pass_metrics(found, (1, ev.k), "", "", prefix + checker)
        out["intervals"] |= {m.metric: [m.ci_low, m.ci_high] for m in metrics}
    return out
