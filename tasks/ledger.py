"""The ledger behind a run's numbers: what computed them (code, environment, verifier
rule), from what (snapshots, repositories at their commits and toolchains, checkpoints
and their parent chains), with which settings (each trainer's resolved settings, the
proving backend, generator, sampling and budgets), and at what cost (wall and CPU
seconds; GPU seconds where a GPU was used, and tokens generated, behind its numbers). `record_start`/`record_end` write what only the running process knows;
`run_ledger` gathers the rest from the catalog for the results card (tasks/card.py).

    python -c "from storage.store import Store; from tasks.ledger import run_ledger; print(run_ledger(Store.open('.dojoflow'), 'RUN'))"
"""

from __future__ import annotations

import importlib.metadata
import platform
import socket

from storage import catalog, ledger
from tasks.compute import gpu_name, process_cpu_seconds
from tasks.lean.verdict import RULE_VERSION as VERIFIER_RULE_VERSION  # never guessed: a failed import fails

# Packages whose versions can change a result; recorded with every run.
RESULT_PACKAGES = (
    "torch",
    "transformers",
    "trl",
    "peft",
    "pytorch-lightning",
    "datasets",
    "prefect",
    "duckdb",
    "pyarrow",
    "numpy",
    "lean-dojo",
    "lean-interact",
    "kimina-client",
)


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def provenance() -> dict:
    """What this process computes with: code, environment, verifier rule, CPU time so far."""
    from tasks.checkpoints import code_version

    code = code_version()
    return {
        "dojoflow_version": code["package"],
        "git_commit": code["git_commit"],
        "git_dirty": code["dirty"],
        "environment": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "host": socket.gethostname(),
            "packages": {p: v for p in RESULT_PACKAGES if (v := _version(p))},
        },
        "verifier_rule_version": VERIFIER_RULE_VERSION,
        "cpu_seconds_at_start": process_cpu_seconds(),
        "gpu": gpu_name(),
    }


def record_start(store, run_id: str) -> None:
    ledger.record_start(store, run_id, provenance())


def record_end(store, run_id: str) -> None:
    import os

    ledger.record_end(store, run_id, process_cpu_seconds(), os.getpid())


def _rows(store, sql: str, **params) -> list[dict]:
    return catalog.query(store, sql, params=params or None).to_pylist()


def checkpoint_chain(store, checkpoint_id: str) -> list[dict]:
    """The checkpoint and its parents, newest first (a cycle or a missing parent ends it)."""
    chain, seen = [], set()
    while checkpoint_id and checkpoint_id not in seen:
        seen.add(checkpoint_id)
        found = _rows(store, "SELECT * FROM checkpoints WHERE checkpoint_id = $id", id=checkpoint_id)
        if not found:
            break
        chain.append(found[0])
        checkpoint_id = found[0]["parent_id"]
    return chain


def backend_version(kind: str | None, provenance: dict | None) -> str:
    """`repl via lean-interact 0.11.6`: the backend and the version that decided, from the run's
    recorded environment ("not recorded" where the run recorded none)."""
    from tasks.lean.registry import backends

    prov = provenance or {}
    declared = backends().get(kind or "")  # its package is its interface to Lean (tasks/lean/registry.py)
    if declared is not None and declared.lower_bound:
        return f"{kind}: Dojoflow {prov.get('dojoflow_version') or 'not recorded'} (no Lean runs)"
    if declared is None or declared.package is None:
        return f"{kind}: version not recorded"
    version = ((prov.get("environment") or {}).get("packages") or {}).get(declared.package)
    said = f"{kind} via {declared.package} {version or '(version not recorded)'}"
    return said + (f" ({declared.package_note})" if declared.package_note else "")


# Keys of a trainer library's config that name where a checkpoint was written, not how it trained.
WHERE_KEYS = ("output_dir", "logging_dir", "run_name")


def trainer_settings(checkpoints: dict[str, list[dict]]) -> dict[str, dict]:
    """Per trainer, the resolved settings (checkpoints.resolved_settings) of the run's newest
    checkpoint of that trainer, without the folders it was written to; None where the catalog
    did not record them (a checkpoint from before they were)."""
    import json

    newest: dict[str, dict] = {}
    for chain in checkpoints.values():
        c = chain[0]
        if c["trainer"] not in newest or str(c.get("created_at")) > str(newest[c["trainer"]].get("created_at")):
            newest[c["trainer"]] = c
    out = {}
    for trainer, c in sorted(newest.items()):
        got = c.get("resolved_settings")
        got = json.loads(got) if isinstance(got, str) else got
        if got and isinstance(got.get("library"), dict):
            got["library"] = {k: v for k, v in got["library"].items() if k not in WHERE_KEYS}
        out[trainer] = got
    return out


def _snapshots(store, snapshot_ids: list[str]) -> list[dict]:
    import json

    if not snapshot_ids:
        return []
    snaps = _rows(store, "SELECT * FROM snapshots WHERE list_contains($ids, snapshot_id)", ids=snapshot_ids)
    repos = {r["repo_id"]: r for r in _rows(store, "SELECT repo_id, name, url, commit, lean_version FROM repositories")}
    for s in snaps:
        s["settings"] = json.loads(s["settings"]) if isinstance(s["settings"], str) else s["settings"]
        s["repositories"] = [repos.get(r, {"repo_id": r}) for r in s["repo_ids"]]
    return sorted(snaps, key=lambda s: len(s["repo_ids"]))


def run_ledger(store, run_id: str) -> dict:
    """Everything the card of `run_id` shows, from the catalog (InputError if no such run)."""
    with catalog.reading(store):  # a dozen queries back to back: one connection
        return _run_ledger(store, run_id)


def _run_ledger(store, run_id: str) -> dict:
    import json

    from storage.errors import InputError

    run = _rows(store, "SELECT * FROM runs WHERE run_id = $run", run=run_id)
    if not run:
        raise InputError(run_id, "is not a run in this store", "run `dojoflow runs` to list them")
    run = run[0]
    config = json.loads(run["config"]) if isinstance(run["config"], str) else (run["config"] or {})
    used = _rows(store, "SELECT DISTINCT checkpoint_id FROM metrics WHERE run_id = $run", run=run_id)
    if _has_table(store, "theorem_results"):  # a `dojoflow prove` run records no metric, only theorems
        used += _rows(store, "SELECT DISTINCT checkpoint_id FROM theorem_results WHERE run_id = $run", run=run_id)
    used = sorted({c["checkpoint_id"] for c in used if c["checkpoint_id"]})
    chains = {cid: checkpoint_chain(store, cid) for cid in used}
    snapshot_ids = sorted({c["snapshot_id"] for chain in chains.values() for c in chain if c["snapshot_id"]})
    wall = None
    if run["started_at"] and run["finished_at"]:
        wall = round((run["finished_at"] - run["started_at"]).total_seconds(), 1)
    return {
        "run": {**run, "config": config},
        "provenance": ledger.read(store, run_id),
        "checkpoints": {cid: chain for cid, chain in chains.items() if chain},
        "snapshots": _snapshots(store, snapshot_ids),
        "proving": (config.get("evaluation") or {}).get("proving") or config.get("proving"),
        "compute": {"wall_seconds": wall, **compute_behind(store, run_id, sorted(chains))},
    }


def _total(values: list) -> float | None:
    """The sum of the figures recorded, None when none was (not counted is not zero)."""
    found = [v for v in values if v is not None]
    return round(sum(found), 3) if found else None


def compute_behind(store, run_id: str, checkpoint_ids: list[str]) -> dict:
    """GPU seconds and tokens generated behind a run's numbers: the training of its checkpoints
    (their figures `gpu_seconds`, `tokens_generated`) and its proof searches (the model's
    `theorem_results` rows, evaluation and `dojoflow prove` alike; the baseline is no model). Each is None where
    nothing recorded it: no GPU, or nothing generated. A figure served from the task cache
    counts the compute that first produced it."""
    import json

    figures = [
        json.loads(r["train_figures"] or "{}")
        for r in _rows(
            store,
            "SELECT train_figures FROM checkpoints WHERE list_contains($ids, checkpoint_id)",
            ids=checkpoint_ids or [""],
        )
    ]
    proving = []
    if _has_table(store, "theorem_results"):
        proving = _rows(
            store,
            "SELECT * FROM theorem_results WHERE run_id = $run AND prover = 'model' AND status <> 'untried'",
            run=run_id,
        )
    sampling = _total([f.get("tokens_generated") for f in figures])
    searching = _total([r.get("tokens") for r in proving])
    return {
        "gpu_seconds": _total([f.get("gpu_seconds") for f in figures] + [r.get("gpu_seconds") for r in proving]),
        "tokens_generated": _total([sampling, searching]),
        # which generated the tokens: GRPO's sampling during training, proof search, or both
        "tokens_from": [w for w, n in (("GRPO sampling", sampling), ("proof search", searching)) if n is not None],
    }


def _has_table(store, name: str) -> bool:
    found = _rows(store, "SELECT count(*) AS n FROM duckdb_tables() WHERE table_name = $t", t=name)
    return bool(found[0]["n"])
