"""`dojoflow prove`: try every `sorry` theorem, write one checked patch per repository (flows/prove.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from storage.errors import DojoflowError

from .common import Home, Repositories, UnsafeNoSandbox, app, fail_exit, home_of
from .output import say, say_line

REPLAY_CANNOT_PROVE_SORRY = (
    "note: the replay backend re-finds traced proofs only, and a `sorry` theorem has none: it proves "
    "no `sorry` theorem. Use the repl, kimina or leandojo backend to prove them (docs/lean-backends.md)."
)


@app.command("prove")
def prove_cmd(
    config: Annotated[
        Optional[Path],
        typer.Argument(
            help="A YAML prove config, or a pipeline config with `evaluation.proving` (default: the Lean REPL backend and the newest SFT checkpoint)."
        ),
    ] = None,
    repo: Repositories = None,
    theorem: Annotated[
        Optional[list[str]],
        typer.Option("--theorem", help="Only this `sorry` theorem (full name); repeat. Default: all of them."),
    ] = None,
    checkpoint: Annotated[
        Optional[Path],
        typer.Option("--checkpoint", help="Tactic generator checkpoint folder (default: the newest SFT checkpoint)."),
    ] = None,
    out: Annotated[
        Optional[Path], typer.Option("--out", help="Folder for the patch files (default: <home>/patches/<run id>/).")
    ] = None,
    unsafe_no_sandbox: UnsafeNoSandbox = False,
    home: Home = None,
):
    """Try every theorem whose proof is `sorry`; proofs go to the catalog, one checked patch per repository.

    Your working tree is never modified: apply a patch with `git apply FILE` in your checkout.
    """
    try:
        from tasks.config import prove_config_from_yaml
        from tasks.proving.sorry import check_prove_run, prove_config

        cfg = prove_config(
            config,
            read=prove_config_from_yaml,
            home=home,
            repos=repo,
            theorems=theorem,
            checkpoint=checkpoint,
            out=out,
            unsafe_no_sandbox=unsafe_no_sandbox,
        )
        resolved = home_of(cfg.home)
        check_prove_run(cfg, resolved)  # every input, before Prefect is imported or a flow starts (exit 2)
    except DojoflowError as e:
        fail_exit(e)
    cfg = cfg.model_copy(update={"home": str(resolved)})
    from tasks.lean.registry import of

    if of(cfg.proving.backend).lower_bound:
        say_line(REPLAY_CANNOT_PROVE_SORRY)
    from .run_session import command_flow

    with command_flow(resolved, "prove") as log:
        from ..prove import prove

        result = prove(config=cfg)
    _print_proved(result)
    say_line(f"log: {log}")


def _print_proved(result: dict) -> None:
    untried = result.get("untried", [])
    say(
        "tried {} sorry theorems, proved {}" + (f"; {len(untried)} could not be tried" if untried else ""),
        result["theorems"],
        len(result["proved"]),
    )
    for name in result["proved"]:
        by = result.get("proved_by", {}).get(name)
        if by:
            say("  proved {} (checked by {})", name, by)  # the checker names the verdict level
        else:
            say("  proved {}", name)
    for name in result.get("unverified", []):
        say("  unverified {} (the backend cannot report axioms; set backend.recheck to check it)", name)
    for u in untried:
        say("  [yellow]not tried[/] {}: {}", u["theorem"], u["reason"])
    for e in result["errors"]:
        say("  [yellow]error[/] {}: {}", e["theorem"], e["error"])
    for w in result["patches"]:
        say("patch for {}: {}   (git apply {})", w["name"], w["path"], w["path"])
    if result.get("card"):
        say("results card: {}", result["card"])
