"""The `dojoflow` command: store, tracing, and pipeline runs from the shell.

    dojoflow import PATH...                 read LeanDojo exports into the store (one commit)
    dojoflow export OUT [--repo URL@COMMIT] write repositories back in LeanDojo's layout
    dojoflow trace URL_OR_PATH [--commit]   trace a Lean 4 repository with lean-dojo
    dojoflow repos                          repositories in curriculum order
    dojoflow sql "SELECT ..."               read-only DuckDB query on the catalog
    dojoflow run [CONFIG.yaml]              the curriculum flow (the sample by default)
    dojoflow runs [--run ID]                what past runs did (and their checkpoints)
    dojoflow metrics [--run ID]             a run's metrics per step, trainer, repository, split
    dojoflow import-progress FILE --name N  progress-model rows in LeanDojo-v2's JSONL format
    dojoflow samples OUT                    the sample's Lean sources as git repositories
    dojoflow prove [--repo R] [--checkpoint C] [CONFIG]   prove `sorry` theorems, write patches
    dojoflow migrate                        bring an older store to this version's format
    dojoflow repair                         rebuild a damaged catalog; drop unreadable repositories
    dojoflow server start|stop|status       a local Prefect server (and UI) kept between runs
    dojoflow import-statements PATH|HUB_ID  a statement set (miniF2F, PutnamBench, NuminaMath-LEAN ...)
    dojoflow leaderboard                    benchmark results, one line per run, as the field reports them
    dojoflow export-proofs OUT              verified proofs as a dataset (Parquet and a dataset card)
    dojoflow verify-statements SET          a set's claimed proofs checked by Lean (kimina)

The store lives in $DOJOFLOW_HOME (default `.dojoflow/` here), or `--home`. Listings
print a table on a terminal and CSV when piped (`--format table|csv|json`, docs/cli.md).
Every error is one line naming the input and the fix, with exit code 2.
"""

from __future__ import annotations

import importlib

from .common import app

app.info.help = __doc__.split("\n\n")[0]
for _module in (
    "store",
    "runs",
    "server",
    "prove",
    "grpo",
    "doctor",
    "statements",
):  # each adds its commands, in this order
    importlib.import_module(f"{__name__}.{_module}")

from .prove import REPLAY_CANNOT_PROVE_SORRY  # noqa: E402


def main() -> None:
    """The `dojoflow` command: `app`, then an exit without the interpreter's module teardown
    (seconds of garbage collection over torch's and Prefect's objects: quick_exit.py)."""
    from .quick_exit import run_and_exit

    run_and_exit(app)


__all__ = ["REPLAY_CANNOT_PROVE_SORRY", "app", "main"]
