"""`dojoflow grpo`: lean-grpo's commands on Dojoflow's GRPO family (docs/grpo.md).

    dojoflow grpo algorithms
    dojoflow grpo train THEOREMS.jsonl [-a dapo] [--algo-config JSON] [-n 8] [-m MODEL] [--lr 5e-6]
                        [-e 1] [-b 4] [--max-steps 20] [--lora-rank 8] [-r binary] [-o OUT]
                        [--config lean-grpo.yaml] [--backend replay|repl|kimina|leandojo]
    dojoflow grpo evaluate CHECKPOINT THEOREMS.jsonl [-k 4] [--backend ...]

Options on the command line win over `--config`. Both train and evaluate run as Prefect
flows (flows/grpo.py): cached, and visible in the Prefect UI. What the options mean and every
check before a flow starts are in tasks/grpo/command_line.py; this module parses and prints.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from storage.errors import DojoflowError, InputError

from .common import Home, app, fail_exit, home_of
from .output import say, say_line

grpo_app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="GRPO, Dr. GRPO, DAPO, GSPO and DGPO with Lean-decided rewards (lean-grpo compatible).",
)
app.add_typer(grpo_app, name="grpo")

Backend = Annotated[
    Optional[str],
    typer.Option(
        "--backend", help="Lean backend: replay (default), repl, kimina, leandojo; or a JSON object of BackendSettings."
    ),
]


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
    processes: Annotated[
        Optional[int],
        typer.Option("--processes", help="Training processes under torchrun (one per GPU; docs/scaling.md)."),
    ] = None,
):
    """GRPO on the theorems of a lean-grpo theorem file (whole proofs, rewards from the backend)."""
    from tasks.grpo.command_line import preflight_inputs, settings_from_fields, train_fields, train_output
    from tasks.grpo.theorem_files import read_lean_grpo_config, read_theorem_file

    try:
        file_fields, file_cli = read_lean_grpo_config(config) if config else ({}, {})
        options = dict(algorithm=algorithm, model=model, reward=reward, algo_config=algo_config, lora_rank=lora_rank)
        options.update(backend=backend, num_generations=num_generations, lr=lr, epochs=epochs)
        options.update(batch_size=batch_size, max_steps=max_steps)
        options.update(processes=processes)
        fields = train_fields(file_fields, options)
        file_theorems = read_theorem_file(theorems)
        settings = settings_from_fields(fields)
        resolved = home_of(home)
        out = train_output(output, file_cli.get("output"), resolved, settings)
        preflight_inputs(settings, file_theorems, resolved)
    except DojoflowError as e:
        fail_exit(e)
    from tasks.grpo.config import DEFAULT_MODEL

    say_line(f"model: {settings.model}{UNTRAINED_NOTE if settings.model == DEFAULT_MODEL else ''}")
    from .run_session import command_flow

    with command_flow(resolved, "grpo-train") as log:
        from ..grpo import grpo_train

        result = grpo_train(str(resolved), str(theorems.resolve()), settings, str(out))
    _print_trained(result)
    say_line(f"log: {log}")


def _print_trained(result: dict) -> None:
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
    from tasks.grpo.command_line import evaluate_fields, preflight_inputs, settings_from_fields
    from tasks.grpo.theorem_files import read_theorem_file

    try:
        if not checkpoint.is_dir():
            raise InputError(checkpoint, "is not a folder", "give a checkpoint folder (dojoflow grpo train -o OUT)")
        fields = evaluate_fields(k, max_new_tokens, temperature, backend)
        file_theorems = read_theorem_file(theorems)
        settings = settings_from_fields(fields)
        resolved = home_of(home)
        preflight_inputs(settings, file_theorems, resolved, checkpoint)
    except DojoflowError as e:
        fail_exit(e)
    from .run_session import command_flow

    with command_flow(resolved, "grpo-evaluate") as log:
        from ..grpo import grpo_evaluate

        result = grpo_evaluate(str(resolved), str(checkpoint.resolve()), str(theorems.resolve()), settings)
    checker = result["checker"]
    say(
        "{}{} theorems, checked by {}: pass@1 {}, pass@{} {} (95% intervals)",
        "(cached) " if result["cached"] else "",
        result["theorems"],
        checker,
        _with_interval(result, f"{checker}_pass@1"),
        result["k"],
        _with_interval(result, f"{checker}_pass@{k}"),
    )
    say_line(_baseline_line(result, checker, k))
    for r in result["results"]:
        if r["proved"]:
            say("  proved {} ({}/{})", r["full_name"], r["proved"], r["n"])
    say_line(f"log: {log}")


def _baseline_line(result: dict, checker: str, k: int) -> str:
    """The closing-tactics baseline beside the figures, and which of the model's are below it."""
    from tasks.metric_registry import below_baseline

    if f"baseline_{checker}_pass@1" not in result:  # a result cached before the baseline was measured
        return "baseline: not measured (a cached result from before; evaluate a new checkpoint to measure it)"
    below = [
        f"pass@{n}"
        for n in (1, k)
        if below_baseline(_row(result, f"{checker}_pass@{n}"), _row(result, f"baseline_{checker}_pass@{n}"))
    ]
    return (
        f"baseline (the closing tactics, same backend and k): pass@1 {_with_interval(result, f'baseline_{checker}_pass@1')}"
        f", pass@{k} {_with_interval(result, f'baseline_{checker}_pass@{k}')}"
        + (f"; the model is BELOW it on {' and '.join(dict.fromkeys(below))}" if below else "")
    )


def _row(result: dict, metric: str) -> dict:
    low, high = (result.get("intervals") or {}).get(metric) or (None, None)
    return {"value": result[metric], "ci_low": low, "ci_high": high, "direction": "higher"}


def _with_interval(result: dict, metric: str) -> str:
    low, high = (result.get("intervals") or {}).get(metric) or (None, None)
    shown = f"{result[metric]:.3f}"
    return shown if low is None else f"{shown} [{low:.3f}, {high:.3f}]"
