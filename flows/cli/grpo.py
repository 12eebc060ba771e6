"""`dojoflow grpo`: lean-grpo's commands on Dojoflow's GRPO family (docs/grpo.md).

    dojoflow grpo algorithms
    dojoflow grpo train THEOREMS.jsonl [-a dapo] [--algo-config JSON] [-n 8] [-m MODEL] [--lr 5e-6]
                        [-e 1] [-b 4] [--max-steps 20] [--lora-rank 8] [-r binary] [-o OUT]
                        [--config lean-grpo.yaml] [--backend replay|repl|kimina|leandojo]
    dojoflow grpo evaluate CHECKPOINT THEOREMS.jsonl [-k 4] [--backend ...]

Options on the command line win over `--config`. Both train and evaluate run as Prefect
flows (flows/grpo.py): cached, and visible in the Prefect UI.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from storage.errors import DojoflowError, InputError

from .common import app
from .output import fail, say, say_line

grpo_app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="GRPO, Dr. GRPO, DAPO, GSPO and DGPO with Lean-decided rewards (lean-grpo compatible).",
)
app.add_typer(grpo_app, name="grpo")

Home = Annotated[Optional[Path], typer.Option("--home", help="Dojoflow home (default: $DOJOFLOW_HOME or ./.dojoflow).")]
Backend = Annotated[
    Optional[str],
    typer.Option(
        "--backend", help="Lean backend: replay (default), repl, kimina, leandojo; or a JSON object of BackendSettings."
    ),
]


def _fail(e: Exception) -> None:
    fail(e)
    raise typer.Exit(2)


def _backend(value: str | None) -> dict | None:
    if value is None:
        return None
    if value.strip().startswith("{"):
        try:
            return json.loads(value)
        except json.JSONDecodeError as e:
            raise InputError(
                "--backend", f"is not valid JSON ({e.msg})", 'e.g. --backend \'{"kind": "repl"}\''
            ) from None
    return {"kind": value}


def _json_option(name: str, value: str | None) -> dict:
    if value is None:
        return {}
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError as e:
        raise InputError(name, f"is not valid JSON ({e.msg})", f"e.g. {name} '{{\"dpo_coef\": 0.5}}'") from None
    if not isinstance(parsed, dict):
        raise InputError(name, "must be a JSON object", f"e.g. {name} '{{\"dpo_coef\": 0.5}}'")
    return parsed


def _settings(fields: dict):
    """GRPOSettings from the merged fields; cheap (no TRL import): `preflight` comes after
    every other input check."""
    from pydantic import ValidationError

    from tasks.grpo.config import GRPOSettings

    try:
        return GRPOSettings.model_validate(fields)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(x) for x in first["loc"]) or "settings"
        message = first["msg"].removeprefix("Value error, ").rstrip(".")
        if message.startswith(f"{where}."):  # a check that names the field and its fix itself
            raise DojoflowError(f"{message}.") from e
        problem, _, fix = message.rpartition(". ") if ". " in message else (message, "", "")
        raise InputError(where, problem, f"{fix or 'Fix that option (dojoflow grpo train --help)'}.") from e


def _home(home: Path | None) -> Path:
    from storage.paths import check_folder_path
    from storage.store import dojoflow_home

    resolved = dojoflow_home(home)
    return check_folder_path(
        resolved, home if home is not None else f"DOJOFLOW_HOME={resolved}", "give --home a folder"
    )


def _check_theorems(settings, theorems: list, home: Path, checkpoint: Path | None = None) -> None:
    """Every theorem checkable by the backend, the backend reachable, the model (or the
    checkpoint to evaluate) usable, then the settings against TRL (seconds of imports, so
    last). Nothing is created, not even an empty store."""
    from storage.store import Store
    from tasks.grpo.theorem_files import checkable_specs
    from tasks.lean import preflight as backend_preflight
    from tasks.lean.config import BackendSettings
    from tasks.trainers.preflight import check_model_reference, preflight

    store = Store.open(home, create=False) if (home / "store").exists() else None
    specs = checkable_specs(settings, theorems, store)
    if checkpoint is None:
        check_model_reference(settings.model, "--model")
    else:
        from tasks.generate.checkpoint import check_causal_lm

        check_causal_lm(checkpoint)
    backend_preflight(BackendSettings.model_validate(settings.backend), specs)
    preflight("grpo", settings)


def _start(home: Path) -> Path:
    from ..runtime.environment import prepare_prefect_env

    prepare_prefect_env(home)
    return home


@grpo_app.command("algorithms")
def algorithms_cmd():
    """Each algorithm with its objective in one line and the paper it follows."""
    from tasks.grpo.algorithms import ALIASES, algorithms

    for a in algorithms():
        aliases = [k for k, v in ALIASES.items() if v == a.name]
        say("[bold]{}[/]{}: {}", a.name, f" ({', '.join(aliases)})" if aliases else "", a.objective)
        say("    paper: {}", a.paper)
        say("    TRL: {}{}", ", ".join(f"{k}={v}" for k, v in a.fixed.items()), f"; {a.notes}" if a.notes else "")


UNTRAINED_NOTE = " (the untrained built-in model: it only shows the pipeline works; give -m MODEL to learn)"


@grpo_app.command("train")
def train_cmd(
    theorems: Annotated[
        Path, typer.Argument(help='lean-grpo theorem file: JSONL, a JSON list, or {"theorems": [...]}.')
    ],
    algorithm: Annotated[
        Optional[str], typer.Option("--algorithm", "-a", help="grpo, dr_grpo (drgrpo), dapo, gspo, dgpo.")
    ] = None,
    algo_config: Annotated[
        Optional[str], typer.Option("--algo-config", help="JSON object of algorithm options.")
    ] = None,
    num_generations: Annotated[
        Optional[int], typer.Option("--num-generations", "-n", help="Completions per theorem (group size).")
    ] = None,
    model: Annotated[Optional[str], typer.Option("--model", "-m", help="Base model or checkpoint folder.")] = None,
    lr: Annotated[Optional[float], typer.Option("--lr", help="Learning rate.")] = None,
    epochs: Annotated[Optional[float], typer.Option("--epochs", "-e", help="Epochs over the theorems.")] = None,
    batch_size: Annotated[
        Optional[int], typer.Option("--batch-size", "-b", help="Completions per device batch (a multiple of -n).")
    ] = None,
    max_steps: Annotated[
        Optional[int], typer.Option("--max-steps", help="Stop after this many optimizer steps.")
    ] = None,
    lora_rank: Annotated[Optional[int], typer.Option("--lora-rank", help="Train a LoRA adapter of this rank.")] = None,
    reward: Annotated[
        Optional[str], typer.Option("--reward", "-r", help="Reward preset: binary, shaped, lenient, strict.")
    ] = None,
    output: Annotated[
        Optional[Path], typer.Option("--output", "-o", help="Checkpoint folder (default: <home>/grpo/<algorithm>).")
    ] = None,
    config: Annotated[
        Optional[Path], typer.Option("--config", help="lean-grpo YAML config (its keys; unknown keys are errors).")
    ] = None,
    backend: Backend = None,
    home: Home = None,
):
    """GRPO on the theorems of a lean-grpo theorem file (whole proofs, rewards from the backend)."""
    from tasks.grpo.output_folder import check_output_folder
    from tasks.grpo.theorem_files import merge_fields, read_lean_grpo_config, read_theorem_file

    try:
        file_fields, file_cli = read_lean_grpo_config(config) if config else ({}, {})
        flags: dict = {"mode": "proof"}
        for key, value in (("algorithm", algorithm), ("model", model), ("reward_preset", reward)):
            if value is not None:
                flags[key] = value
        if algo_config is not None:
            flags["algorithm_config"] = _json_option("--algo-config", algo_config)
        training = {
            k: v
            for k, v in (
                ("num_generations", num_generations),
                ("learning_rate", lr),
                ("num_train_epochs", epochs),
                ("per_device_train_batch_size", batch_size),
                ("max_steps", max_steps),
            )
            if v is not None
        }
        if training:
            flags["training"] = training
        if lora_rank is not None:
            flags["lora"] = {"r": lora_rank}
        if backend is not None:
            flags["backend"] = _backend(backend)
        fields = merge_fields({"mode": "proof"}, file_fields, flags)
        n = fields.get("training", {}).get("num_generations")
        if n is not None and "per_device_train_batch_size" not in fields.get("training", {}):
            fields["training"]["per_device_train_batch_size"] = n  # lean-grpo's batch is in theorems; one group
        file_theorems = read_theorem_file(theorems)
        settings = _settings(fields)
        resolved = _home(home)
        shown = "-o" if output else "output_dir" if file_cli.get("output") else "-o (default)"
        out = check_output_folder(
            output or file_cli.get("output") or resolved / "grpo" / settings.algorithm, resolved, shown
        )
        _check_theorems(settings, file_theorems, resolved)
    except DojoflowError as e:
        _fail(e)
    _start(resolved)
    from tasks.grpo.config import DEFAULT_MODEL

    say_line(f"model: {settings.model}{UNTRAINED_NOTE if settings.model == DEFAULT_MODEL else ''}")
    from ..grpo import grpo_train
    from .terminal import library_output_to_log

    try:
        with library_output_to_log(resolved, "grpo-train") as log:
            result = grpo_train(str(resolved), str(theorems.resolve()), settings.model_dump(mode="json"), str(out))
    except DojoflowError as e:
        _fail(e)
    say(
        "[bold green]done[/]: {} on {} theorems, {} steps, mean reward {}; checkpoint {}{}",
        result["algorithm"],
        result["prompts"],
        result["steps"],
        result["reward_mean"],
        result["output"],
        " (cached: same theorems, settings and output)" if result["cached"] else "",
    )
    if result["steps"] and result.get("steps_without_signal") == result["steps"]:
        from tasks.grpo.signal_watch import NO_SIGNAL_HINT

        say_line(f"warning: nothing was learned: at every step {NO_SIGNAL_HINT}")
    say_line(f"log: {log}")


@grpo_app.command("evaluate")
def evaluate_cmd(
    checkpoint: Annotated[Path, typer.Argument(help="A checkpoint folder (dojoflow grpo train -o, or any causal LM).")],
    theorems: Annotated[Path, typer.Argument(help="lean-grpo theorem file.")],
    k: Annotated[int, typer.Option("-k", help="Proofs sampled per theorem (pass@k).")] = 4,
    max_new_tokens: Annotated[int, typer.Option("--max-new-tokens", help="Longest proof, in tokens.")] = 64,
    temperature: Annotated[float, typer.Option("--temperature", help="Sampling temperature.")] = 1.0,
    backend: Backend = None,
    home: Home = None,
):
    """pass@1 and pass@k of whole-proof sampling from CHECKPOINT, checked by the backend and the verdict rule."""
    from tasks.grpo.theorem_files import read_theorem_file

    try:
        if not checkpoint.is_dir():
            raise InputError(checkpoint, "is not a folder", "give a checkpoint folder (dojoflow grpo train -o OUT)")
        fields = {"mode": "proof", "evaluation": {"k": k, "max_new_tokens": max_new_tokens, "temperature": temperature}}
        if backend is not None:
            fields["backend"] = _backend(backend)
        file_theorems = read_theorem_file(theorems)
        settings = _settings(fields)
        resolved = _home(home)
        _check_theorems(settings, file_theorems, resolved, checkpoint)
    except DojoflowError as e:
        _fail(e)
    _start(resolved)
    from ..grpo import grpo_evaluate
    from .terminal import library_output_to_log

    try:
        with library_output_to_log(resolved, "grpo-evaluate") as log:
            result = grpo_evaluate(
                str(resolved), str(checkpoint.resolve()), str(theorems.resolve()), settings.model_dump(mode="json")
            )
    except DojoflowError as e:
        _fail(e)
    checker = result["checker"]
    say(
        "{}{} theorems, checked by {}: pass@1 {}, pass@{} {}",
        "(cached) " if result["cached"] else "",
        result["theorems"],
        checker,
        f"{result[f'{checker}_pass@1']:.3f}",
        result["k"],
        f"{result[f'{checker}_pass@{k}']:.3f}",
    )
    for r in result["results"]:
        if r["proved"]:
            say("  proved {} ({}/{})", r["full_name"], r["proved"], r["n"])
    say_line(f"log: {log}")
