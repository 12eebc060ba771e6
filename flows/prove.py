"""Proving flows: `prove` (try every `sorry` theorem, write patches) and `evaluate-proving`
(a checkpoint's pass@k on chosen repositories); `proving_step` is the curriculum's proving
evaluation after a tactic generator trains (docs/proving.md).

    dojoflow prove --repo NatBasics --checkpoint .dojoflow/checkpoints/sft/<id> [CONFIG.yaml]

Theorems are searched in batches, one Prefect task per batch (`.map`), so the flow's task
runner spreads them: threads by default, a Dask or Ray cluster when the flow runs with
`prefect_dask.DaskTaskRunner` or `prefect_ray.RayTaskRunner`.
"""

from __future__ import annotations

from prefect import flow, get_run_logger, unmapped
from prefect.runtime import flow_run

from storage.store import dojoflow_home
from tasks.prefect_tasks import tasks_for
from tasks.proving.config import ProveConfig, ProvingSettings

from .proving_tasks import proving_tasks


def search_batches(
    p, home: str, settings: ProvingSettings, checkpoint: dict | None, theorems: list[dict]
) -> list[dict]:
    """Search `theorems` in batches of `settings.batch_size`, one mapped task each; records in order."""
    batches = [theorems[i : i + settings.batch_size] for i in range(0, len(theorems), settings.batch_size)]
    futures = p.prove_batch.map(unmapped(home), unmapped(settings), unmapped(checkpoint), batches, range(len(batches)))
    return [record for f in futures for record in f.result()]


def proving_step(
    home: str,
    settings: ProvingSettings,
    checkpoint: dict,
    repo_ids: list[str],
    split_kind: str,
    run_id: str,
    step: int,
    step_repo_id: str,
) -> dict:
    """The curriculum's proving evaluation of one step's tactic generator: {metrics, searched_by}."""
    p, t = proving_tasks(home), tasks_for(home)
    theorems = p.select(home, repo_ids, split_kind, settings)
    p.check(home, settings, checkpoint, theorems)  # bad settings fail here, before any search
    records = search_batches(p, home, settings, checkpoint, theorems)
    rows = p.metrics(records, settings, checkpoint["checkpoint_id"], split_kind)
    t.record_metrics(home, rows, run_id, step, step_repo_id)
    p.record_proofs(home, records, run_id, checkpoint["checkpoint_id"], "evaluation")
    pass_rates = [
        f"{r['repo_id'].split('-')[0]}/{r['split']} {r['metric']}={r['value']:.3f}"
        for r in rows
        if "pass@" in r["metric"]
    ]
    get_run_logger().info("proving at step %s: %s", step, "; ".join(pass_rates) or "no theorem was decided")
    return {"metrics": rows, "searched_by": sorted({r["searched_by"] for r in records})}


@flow(name="evaluate-proving", persist_result=False)
def evaluate_proving(
    home: str,
    checkpoint: dict,
    repo_ids: list[str],
    split_kind: str = "random",
    settings: ProvingSettings = ProvingSettings(),
) -> dict:
    """A checkpoint's proving metrics on `repo_ids` (the curriculum's proving step, on its own):
    {metrics, searched_by (the workers that searched)}."""
    home = str(dojoflow_home(home))
    return proving_step(
        home,
        settings,
        checkpoint,
        repo_ids,
        split_kind,
        str(flow_run.id or "local"),
        0,
        repo_ids[0] if repo_ids else "",
    )


def prove_run_name(config: ProveConfig) -> str:
    """`prove NatBasics, ListLemmas` (or `prove all repositories`): the name in the UI and `dojoflow runs`."""
    repos = [r.rstrip("/").rsplit("/", 1)[-1] for r in config.repos]
    return "prove " + (", ".join(repos) if repos else "all repositories")


def _flow_run_name() -> str:
    config = flow_run.parameters.get("config")
    return prove_run_name(config if isinstance(config, ProveConfig) else ProveConfig.model_validate(config or {}))


@flow(name="prove", flow_run_name=_flow_run_name, persist_result=False)
def prove(config: ProveConfig = ProveConfig()) -> dict:
    """Try every `sorry` theorem of the chosen repositories; proofs to the catalog, one patch per repository."""
    from pathlib import Path

    log = get_run_logger()
    home = str(dojoflow_home(config.home))
    run_id = str(flow_run.id or "local")
    p, t = proving_tasks(home), tasks_for(home)
    settings = config.proving

    # Which theorems and which generator; bad input fails here, before any search
    theorems, checkpoint = p.resolve(home, config.repos, config.theorems, config.checkpoint, settings)
    p.check(home, settings, checkpoint, theorems)
    t.record_run_start(home, run_id, "prove", {"name": prove_run_name(config), **config.model_dump(mode="json")})

    # Search every sorry theorem, in batches spread by the task runner
    records = search_batches(p, home, settings, checkpoint, theorems)
    p.record_proofs(home, records, run_id, checkpoint["checkpoint_id"], "sorry")

    # One checked patch per repository with proofs
    proved = [r for r in records if r["proof"]]
    out = config.out or str(Path(home) / "patches" / run_id)
    written = p.write_patches(home, proved, out) if proved else []
    t.record_run_end(home, run_id, "completed", None)
    for w in written:
        log.info("patch for %s (%d proofs): %s", w["name"], len(w["theorems"]), w["path"])
    return {
        "run_id": run_id,
        "theorems": len(records),
        "proved": [r["full_name"] for r in proved],
        "errors": [{"theorem": r["full_name"], "error": r["error"]} for r in records if r["errors"]],
        # finished, but the backend cannot verify it (the Dojo without `backend.recheck`): no patch
        "unverified": [r["full_name"] for r in records if r.get("unverified")],
        "patches": written,
    }
